/* Stub of ESP-IDF components/esp_wifi/include/esp_now.h (v5.x and v6.0 signatures; declarations only). */
#ifndef __ESP_NOW_H__
#define __ESP_NOW_H__

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "esp_err.h"
#include "esp_idf_version.h"
#include "esp_wifi_types.h"

#define ESP_ERR_ESPNOW_BASE         (ESP_ERR_WIFI_BASE + 100)
#define ESP_ERR_ESPNOW_NOT_INIT     (ESP_ERR_ESPNOW_BASE + 1)
#define ESP_ERR_ESPNOW_ARG          (ESP_ERR_ESPNOW_BASE + 2)
#define ESP_ERR_ESPNOW_NO_MEM       (ESP_ERR_ESPNOW_BASE + 3)
#define ESP_ERR_ESPNOW_FULL         (ESP_ERR_ESPNOW_BASE + 4)
#define ESP_ERR_ESPNOW_NOT_FOUND    (ESP_ERR_ESPNOW_BASE + 5)
#define ESP_ERR_ESPNOW_INTERNAL     (ESP_ERR_ESPNOW_BASE + 6)
#define ESP_ERR_ESPNOW_EXIST        (ESP_ERR_ESPNOW_BASE + 7)
#define ESP_ERR_ESPNOW_IF           (ESP_ERR_ESPNOW_BASE + 8)
#define ESP_ERR_ESPNOW_CHAN         (ESP_ERR_ESPNOW_BASE + 9)

#define ESP_NOW_ETH_ALEN             6
#define ESP_NOW_KEY_LEN              16
#define ESP_NOW_MAX_TOTAL_PEER_NUM   20
#define ESP_NOW_MAX_IE_DATA_LEN      250
#define ESP_NOW_MAX_DATA_LEN         ESP_NOW_MAX_IE_DATA_LEN

typedef enum {
    ESP_NOW_SEND_SUCCESS = 0,
    ESP_NOW_SEND_FAIL,
} esp_now_send_status_t;

typedef struct esp_now_peer_info {
    uint8_t peer_addr[ESP_NOW_ETH_ALEN];
    uint8_t lmk[ESP_NOW_KEY_LEN];
    uint8_t channel;
    wifi_interface_t ifidx;
    bool encrypt;
    void *priv;
} esp_now_peer_info_t;

typedef struct esp_now_recv_info {
    uint8_t *src_addr;
    uint8_t *des_addr;
    wifi_pkt_rx_ctrl_t *rx_ctrl;
} esp_now_recv_info_t;

typedef void (*esp_now_recv_cb_t)(const esp_now_recv_info_t *esp_now_info, const uint8_t *data, int data_len);

#if ESP_IDF_VERSION >= ESP_IDF_VERSION_VAL(5, 5, 0)
typedef wifi_tx_info_t esp_now_send_info_t;
typedef void (*esp_now_send_cb_t)(const esp_now_send_info_t *tx_info, esp_now_send_status_t status);
#else
typedef void (*esp_now_send_cb_t)(const uint8_t *mac_addr, esp_now_send_status_t status);
#endif

esp_err_t esp_now_init(void);
esp_err_t esp_now_deinit(void);
esp_err_t esp_now_register_recv_cb(esp_now_recv_cb_t cb);
esp_err_t esp_now_unregister_recv_cb(void);
esp_err_t esp_now_register_send_cb(esp_now_send_cb_t cb);
esp_err_t esp_now_unregister_send_cb(void);
esp_err_t esp_now_send(const uint8_t *peer_addr, const uint8_t *data, size_t len);
esp_err_t esp_now_add_peer(const esp_now_peer_info_t *peer);
esp_err_t esp_now_del_peer(const uint8_t *peer_addr);
esp_err_t esp_now_set_pmk(const uint8_t *pmk);
bool esp_now_is_peer_exist(const uint8_t *peer_addr);

#endif
