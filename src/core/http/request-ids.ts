const ID_BYTES = 16;
const BATCH = 1024;
const HEX_DIGITS = new TextEncoder().encode('0123456789abcdef');

/** 128 random bits as 32 hex digits, telling nothing of traffic; drawn and written out in batches (docs/performance.md). */
export function createRequestIds(): () => string {
  const bytes = new Uint8Array(ID_BYTES * BATCH);
  const digits = new Uint8Array(2 * ID_BYTES * BATCH);
  const decoder = new TextDecoder();
  let hex = '';
  let at = 0;
  return function newRequestId() {
    if (at >= hex.length) {
      crypto.getRandomValues(bytes);
      for (let i = 0; i < bytes.length; i += 1) {
        digits[2 * i] = HEX_DIGITS[bytes[i]! >> 4]!;
        digits[2 * i + 1] = HEX_DIGITS[bytes[i]! & 15]!;
      }
      hex = decoder.decode(digits);
      at = 0;
    }
    at += 2 * ID_BYTES;
    return hex.slice(at - 2 * ID_BYTES, at);
  };
}
