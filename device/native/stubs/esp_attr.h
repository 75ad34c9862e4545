/* Stub of ESP-IDF's esp_attr.h: placement attributes, empty on the host. */
#ifndef __ESP_ATTR_H__
#define __ESP_ATTR_H__

#define IRAM_ATTR

#endif
