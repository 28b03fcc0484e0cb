import QRCode from 'qrcode';

/**
 * The QR content as a PNG data URI (`data:image/png;base64,...`), for panels
 * that would rather show an image than bundle a QR library. Error correction
 * M, the standard 4-module quiet zone, 6 px a module (about 300 px for a
 * WhatsApp link QR). Nothing to scan (empty content) gives "".
 */
export async function qrPngDataUri(content: string): Promise<string> {
  if (!content) return '';
  return QRCode.toDataURL(content, { type: 'image/png', errorCorrectionLevel: 'M', margin: 4, scale: 6 });
}
