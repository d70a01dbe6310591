// MD5 (RFC 1321), incrementally: what S3 makes a part's ETag of, so that a client resuming an upload can tell whether
// a part storage holds is the local file's own bytes. WebCrypto has no MD5, and this is no security use: a match is
// checked, never trusted as a signature.

// Per-round shift amounts, and the sines' integer parts (K[i] = floor(|sin(i + 1)| * 2^32)).
const SHIFTS = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];
const K = Array.from({ length: 64 }, (_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) >>> 0);

export class Md5 {
  private state = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476];
  private readonly pending = new Uint8Array(64);
  private pendingLength = 0;
  private length = 0; // bytes in all
  private readonly words = new Uint32Array(16);

  update(data: Uint8Array): this {
    this.length += data.length;
    let offset = 0;
    if (this.pendingLength > 0) {
      const taken = Math.min(64 - this.pendingLength, data.length);
      this.pending.set(data.subarray(0, taken), this.pendingLength);
      this.pendingLength += taken;
      offset = taken;
      if (this.pendingLength < 64) return this;
      this.block(this.pending, 0);
      this.pendingLength = 0;
    }
    for (; offset + 64 <= data.length; offset += 64) this.block(data, offset);
    this.pending.set(data.subarray(offset), 0);
    this.pendingLength = data.length - offset;
    return this;
  }

  /** The digest in lower-case hex (as an ETag shows it). */
  hex(): string {
    const bits = this.length * 8;
    const tail = new Uint8Array((this.pendingLength < 56 ? 64 : 128) - this.pendingLength);
    tail[0] = 0x80;
    const view = new DataView(tail.buffer);
    view.setUint32(tail.length - 8, bits >>> 0, true);
    view.setUint32(tail.length - 4, Math.floor(bits / 2 ** 32), true);
    this.length -= tail.length; // the padding is not message
    this.update(tail);
    const out = new DataView(new ArrayBuffer(16));
    this.state.forEach((word, index) => out.setUint32(index * 4, word, true));
    return Array.from(new Uint8Array(out.buffer), (byte) => byte.toString(16).padStart(2, "0")).join("");
  }

  private block(data: Uint8Array, offset: number): void {
    const words = this.words;
    for (let i = 0; i < 16; i += 1) {
      const at = offset + i * 4;
      words[i] = (data[at]! | (data[at + 1]! << 8) | (data[at + 2]! << 16) | (data[at + 3]! << 24)) >>> 0;
    }
    let [a, b, c, d] = this.state as [number, number, number, number];
    for (let i = 0; i < 64; i += 1) {
      const round = i >> 4;
      let f: number;
      let g: number;
      if (round === 0) {
        f = (b & c) | (~b & d);
        g = i;
      } else if (round === 1) {
        f = (d & b) | (~d & c);
        g = (5 * i + 1) % 16;
      } else if (round === 2) {
        f = b ^ c ^ d;
        g = (3 * i + 5) % 16;
      } else {
        f = c ^ (b | ~d);
        g = (7 * i) % 16;
      }
      const shift = SHIFTS[round * 4 + (i % 4)]!;
      const sum = (f + a + K[i]! + words[g]!) >>> 0;
      a = d;
      d = c;
      c = b;
      b = (b + ((sum << shift) | (sum >>> (32 - shift)))) >>> 0;
    }
    const state = this.state;
    state[0] = (state[0]! + a) >>> 0;
    state[1] = (state[1]! + b) >>> 0;
    state[2] = (state[2]! + c) >>> 0;
    state[3] = (state[3]! + d) >>> 0;
  }
}
