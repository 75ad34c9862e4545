// What the device can work out at build time. Preloaded (manifest.json): this module runs in
// the XS linker, so the resolved configuration and the catalog index live in flash, and a
// configuration problem fails the build with DeviceConfigError's list instead of the boot.
// Nothing here may touch the hardware (no native call can run during preload).

import config from 'mc/config';
import { DEFAULT_CATALOG } from '../catalog/default.js';
import { loadCatalog, type CatalogIndex } from '../catalog/index.js';
import { resolveDeviceConfig, type DeviceConfig } from './config.js';

export const CONFIG: DeviceConfig = resolveDeviceConfig(config);
/** Validated and indexed once, at preload: about 1,100 slots and 20 KB of chunks that stay out of RAM. */
export const CATALOG: CatalogIndex = loadCatalog(DEFAULT_CATALOG);
