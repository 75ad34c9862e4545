/* Stub of the mc.defines.h that mcconfig generates from the manifest's "defines" (MODDEF_*). */
