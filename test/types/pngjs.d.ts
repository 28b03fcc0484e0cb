/** The part of pngjs (a dependency of qrcode) the QR image test uses. */
declare module 'pngjs' {
  export const PNG: { sync: { read(buffer: Buffer): { width: number; height: number; data: Buffer } } };
}
