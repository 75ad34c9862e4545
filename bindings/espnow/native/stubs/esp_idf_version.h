/* Stub of ESP-IDF components/esp_common/include/esp_idf_version.h. */
#ifndef __ESP_IDF_VERSION_H__
#define __ESP_IDF_VERSION_H__

#ifndef STUB_IDF_MAJOR
#define STUB_IDF_MAJOR 6
#endif
#ifndef STUB_IDF_MINOR
#define STUB_IDF_MINOR 0
#endif

#define ESP_IDF_VERSION_MAJOR STUB_IDF_MAJOR
#define ESP_IDF_VERSION_MINOR STUB_IDF_MINOR
#define ESP_IDF_VERSION_PATCH 0

#define ESP_IDF_VERSION_VAL(major, minor, patch) (((major) << 16) | ((minor) << 8) | (patch))
#define ESP_IDF_VERSION ESP_IDF_VERSION_VAL(ESP_IDF_VERSION_MAJOR, ESP_IDF_VERSION_MINOR, ESP_IDF_VERSION_PATCH)

#endif
