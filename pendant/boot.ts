// What the pendant can work out at build time (docs/pendant.md "Configuration"). Preloaded
// (pendant/manifest.json): this module runs in the XS linker, so the resolved settings and the
// catalog index live in flash, and a configuration problem fails the build with the whole list
// (PendantConfigError). Nothing here may touch the hardware.

import config from 'mc/config';
import { DEFAULT_CATALOG } from '../catalog/default.js';
import { loadCatalog, type CatalogIndex } from '../catalog/index.js';
import { resolvePendantConfig, type PendantSettings } from './settings.js';

export const SETTINGS: PendantSettings = resolvePendantConfig(config);
/** The hub's catalog as this firmware knows it: the client core uses it when WELCOME's hash matches. */
export const CATALOG: CatalogIndex = loadCatalog(DEFAULT_CATALOG);
