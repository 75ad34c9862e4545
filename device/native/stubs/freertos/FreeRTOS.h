/* Stub of ESP-IDF's FreeRTOS port: the critical-section spinlock, in tasks and in interrupts. */
#ifndef INC_FREERTOS_H
#define INC_FREERTOS_H

#include <stdint.h>

typedef struct {
    volatile uint32_t owner;
    volatile uint32_t count;
} spinlock_t;

typedef spinlock_t portMUX_TYPE;

#define SPINLOCK_FREE 0xB33FFFFF
#define portMUX_INITIALIZER_UNLOCKED { .owner = SPINLOCK_FREE, .count = 0 }

void vPortEnterCritical(portMUX_TYPE *mux);
void vPortExitCritical(portMUX_TYPE *mux);

#define portENTER_CRITICAL(mux) vPortEnterCritical(mux)
#define portEXIT_CRITICAL(mux) vPortExitCritical(mux)
#define portENTER_CRITICAL_ISR(mux) vPortEnterCritical(mux)
#define portEXIT_CRITICAL_ISR(mux) vPortExitCritical(mux)

#endif
