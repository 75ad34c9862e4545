/* Stub of ESP-IDF's driver/gpio.h: the level calls the stop line makes (declarations only). */
#ifndef _DRIVER_GPIO_H_
#define _DRIVER_GPIO_H_

#include <stdint.h>
#include "esp_err.h"

typedef enum {
    GPIO_NUM_NC = -1,
    GPIO_NUM_0 = 0,
    GPIO_NUM_MAX = 49,
} gpio_num_t;

esp_err_t gpio_set_level(gpio_num_t gpio_num, uint32_t level);
int gpio_get_level(gpio_num_t gpio_num);

#endif
