/* Stub of the build's generated sdkconfig.h: nothing set, as with the SDK's defaults (no task watchdog). */
#pragma once
