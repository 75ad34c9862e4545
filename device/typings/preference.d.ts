// As typings/preference.d.ts of the SDK (modules/files/preference; NVS on the ESP32: domain
// and key names up to 15 characters; an ArrayBuffer is stored as a blob and read back as one).
declare module 'preference' {
  var Preference: {
    set: (domain: string, key: string, value: string | boolean | number | ArrayBuffer) => void;
    get: (domain: string, key: string) => string | boolean | number | ArrayBuffer | undefined;
    delete: (domain: string, key: string) => void;
    keys: (domain: string) => string[];
  };
  export { Preference as default };
}
