/* Stub of ESP-IDF's esp_err.h (declarations only). */
#ifndef __ESP_ERR_H__
#define __ESP_ERR_H__

#include <stdint.h>

typedef int esp_err_t;

#define ESP_OK 0
#define ESP_FAIL -1
#define ESP_ERR_NO_MEM 0x101
#define ESP_ERR_INVALID_ARG 0x102
#define ESP_ERR_INVALID_STATE 0x103

#endif
