/* Stub of ESP-IDF components/esp_wifi/include/esp_wifi_types*.h: the types esp_now.h names. */
#ifndef __ESP_WIFI_TYPES_H__
#define __ESP_WIFI_TYPES_H__

#include <stdint.h>
#include "esp_idf_version.h"

typedef enum {
    WIFI_IF_STA = 0,
    WIFI_IF_AP = 1,
    WIFI_IF_NAN = 2,
    WIFI_IF_MAX
} wifi_interface_t;

typedef enum {
    WIFI_PHY_MODE_LR,
    WIFI_PHY_MODE_11B,
    WIFI_PHY_MODE_11G,
    WIFI_PHY_MODE_HT20,
    WIFI_PHY_MODE_HT40,
    WIFI_PHY_MODE_HE20,
} wifi_phy_mode_t;

typedef enum {
    WIFI_PHY_RATE_1M_L = 0x00,
    WIFI_PHY_RATE_2M_L = 0x01,
    WIFI_PHY_RATE_MAX,
} wifi_phy_rate_t;

/* Opaque here: the module never reads the receive control fields. */
typedef struct {
    signed rssi: 8;
    unsigned rate: 5;
} wifi_pkt_rx_ctrl_t;

#if ESP_IDF_VERSION >= ESP_IDF_VERSION_VAL(5, 5, 0)
typedef enum {
    WIFI_SEND_SUCCESS = 0,
    WIFI_SEND_FAIL,
} wifi_tx_status_t;

typedef struct {
    uint8_t *des_addr;
    uint8_t *src_addr;
    wifi_interface_t ifidx;
    uint8_t *data;
    uint8_t data_len;
    wifi_phy_rate_t rate;
    wifi_tx_status_t tx_status;
} wifi_tx_info_t;
#endif

#endif
