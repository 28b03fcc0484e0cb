// The server half of the network's Noise XX handshake, its transport framing and the fake certificate chain.
import { createCipheriv, createDecipheriv, createHash, hkdfSync } from 'node:crypto';
import { calculateAgreement, calculateSignature, generateKeyPair, verifySignature } from 'libsignal/src/curve.js';
import type * as Baileys from 'baileys';

type Proto = typeof Baileys.proto;

/** A Curve25519 key pair as Baileys' Curve keeps it: 32-byte public key, no type byte. */
export interface KeyPair {
  pub: Buffer;
  priv: Buffer;
}

export function newKeyPair(): KeyPair {
  const { pubKey, privKey } = generateKeyPair();
  return { pub: Buffer.from(pubKey).subarray(1), priv: Buffer.from(privKey) };
}

const withType = (pub: Uint8Array): Buffer => (pub.length === 33 ? Buffer.from(pub) : Buffer.concat([Buffer.from([5]), pub]));
export const sign = (priv: Buffer, msg: Buffer): Buffer => Buffer.from(calculateSignature(priv, msg));
/** libsignal's own check, which returns false on a bad signature (Baileys rc14's Curve.verify does not look at it). */
export const verify = (pub: Uint8Array, msg: Buffer, sig: Uint8Array): boolean => {
  try {
    return verifySignature(withType(pub), msg, sig);
  } catch {
    return false;
  }
};
export const dh = (priv: Buffer, pub: Buffer): Buffer => Buffer.from(calculateAgreement(withType(pub), priv));
const sha256 = (b: Buffer): Buffer => createHash('sha256').update(b).digest();

/** root → intermediate → leaf (the server's static key), each really signed by the one above. */
export interface CertChain {
  root: KeyPair;
  intermediate: KeyPair;
  encoded: Buffer;
}

export function makeCertChain(proto: Proto, root: KeyPair, leafKey: Buffer, forgeIntermediate = false): CertChain {
  const intermediate = newKeyPair();
  const now = Math.floor(Date.now() / 1000);
  const Details = proto.CertChain.NoiseCertificate.Details;
  const interDetails = Buffer.from(
    Details.encode({ serial: 1, issuerSerial: 0, key: intermediate.pub, notBefore: now - 3600, notAfter: now + 365 * 86400 }).finish(),
  );
  const leafDetails = Buffer.from(Details.encode({ serial: 2, issuerSerial: 1, key: leafKey, notBefore: now - 3600, notAfter: now + 30 * 86400 }).finish());
  const interSig = forgeIntermediate ? sign(newKeyPair().priv, interDetails) : sign(root.priv, interDetails);
  const encoded = Buffer.from(
    proto.CertChain.encode({
      intermediate: { details: interDetails, signature: interSig },
      leaf: { details: leafDetails, signature: sign(intermediate.priv, leafDetails) },
    }).finish(),
  );
  return { root, intermediate, encoded };
}

/** Checks a chain as a fixed client would: intermediate signed by the root, leaf by the intermediate. */
export function verifyCertChain(proto: Proto, encoded: Buffer, rootPub: Buffer): boolean {
  const chain = proto.CertChain.decode(encoded);
  const inter = chain.intermediate;
  const leaf = chain.leaf;
  if (!inter?.details || !inter.signature || !leaf?.details || !leaf.signature) return false;
  const interKey = proto.CertChain.NoiseCertificate.Details.decode(inter.details).key;
  if (!interKey) return false;
  return verify(rootPub, Buffer.from(inter.details), inter.signature) && verify(interKey, Buffer.from(leaf.details), leaf.signature);
}

const NOISE_MODE = Buffer.from('Noise_XX_25519_AESGCM_SHA256\0\0\0\0');
const gcm = (enc: boolean, key: Buffer, counter: number, aad: Buffer, data: Buffer): Buffer => {
  const iv = Buffer.alloc(12);
  iv.writeUInt32BE(counter, 8);
  if (enc) {
    const c = createCipheriv('aes-256-gcm', key, iv);
    c.setAAD(aad);
    return Buffer.concat([c.update(data), c.final(), c.getAuthTag()]);
  }
  const d = createDecipheriv('aes-256-gcm', key, iv);
  d.setAAD(aad);
  d.setAuthTag(data.subarray(data.length - 16));
  return Buffer.concat([d.update(data.subarray(0, data.length - 16)), d.final()]);
};

/**
 * One connection's Noise state on the server side, mirroring Baileys' noise-handler.js:
 * the same hash/salt/key schedule, with the roles of the transport keys swapped.
 */
export class NoiseServer {
  private hash: Buffer = NOISE_MODE;
  private salt: Buffer = NOISE_MODE;
  private key: Buffer = NOISE_MODE;
  private counter = 0;
  private readonly ephemeral = newKeyPair();
  private tx?: { key: Buffer; n: number };
  private rx?: { key: Buffer; n: number };
  private inBytes = Buffer.alloc(0);
  private sawIntro = false;
  clientStatic?: Buffer;

  constructor(
    private readonly proto: Proto,
    private readonly staticKey: KeyPair,
    private readonly certChain: Buffer,
  ) {}

  private mixHash(data: Buffer): void {
    this.hash = sha256(Buffer.concat([this.hash, data]));
  }
  private mixKey(data: Buffer): void {
    const k = Buffer.from(hkdfSync('sha256', data, this.salt, Buffer.alloc(0), 64));
    this.salt = k.subarray(0, 32);
    this.key = k.subarray(32);
    this.counter = 0;
  }
  private encrypt(plain: Buffer): Buffer {
    const out = gcm(true, this.key, this.counter++, this.hash, plain);
    this.mixHash(out);
    return out;
  }
  private decrypt(cipher: Buffer): Buffer {
    const out = gcm(false, this.key, this.counter++, this.hash, cipher);
    this.mixHash(cipher);
    return out;
  }

  get ready(): boolean {
    return this.tx !== undefined;
  }

  /** Splits incoming bytes into frames (the first carries the 4-byte intro header); returns whole frames. */
  frames(data: Buffer): Buffer[] {
    this.inBytes = Buffer.concat([this.inBytes, data]);
    if (!this.sawIntro) {
      if (this.inBytes.length < 4) return [];
      const header = this.inBytes.subarray(0, 4);
      if (header[0] === 0x45 && header[1] === 0x44) throw new Error('routing-info intro header not supported by the fake');
      this.mixHash(header);
      this.inBytes = this.inBytes.subarray(4);
      this.sawIntro = true;
    }
    const out: Buffer[] = [];
    while (this.inBytes.length >= 3) {
      const size = (this.inBytes[0]! << 16) | (this.inBytes[1]! << 8) | this.inBytes[2]!;
      if (this.inBytes.length < size + 3) break;
      const frame = this.inBytes.subarray(3, size + 3);
      this.inBytes = this.inBytes.subarray(size + 3);
      out.push(this.rx ? this.transportDecrypt(frame) : Buffer.from(frame));
    }
    return out;
  }

  /** ClientHello → ServerHello frame. */
  serverHello(frame: Buffer): Buffer {
    const hello = this.proto.HandshakeMessage.decode(frame).clientHello;
    if (!hello?.ephemeral) throw new Error('no ClientHello');
    const clientEphemeral = Buffer.from(hello.ephemeral);
    this.mixHash(clientEphemeral);
    this.mixHash(this.ephemeral.pub);
    this.mixKey(dh(this.ephemeral.priv, clientEphemeral));
    const staticEnc = this.encrypt(this.staticKey.pub);
    this.mixKey(dh(this.staticKey.priv, clientEphemeral));
    const payloadEnc = this.encrypt(this.certChain);
    const msg = this.proto.HandshakeMessage.encode({
      serverHello: { ephemeral: this.ephemeral.pub, static: staticEnc, payload: payloadEnc },
    }).finish();
    return frameOf(Buffer.from(msg));
  }

  /** ClientFinish → the ClientPayload (registration or login); transport keys are ready after. */
  clientFinish(frame: Buffer): Baileys.proto.ClientPayload {
    const finish = this.proto.HandshakeMessage.decode(frame).clientFinish;
    if (!finish?.static || !finish.payload) throw new Error('no ClientFinish');
    this.clientStatic = this.decrypt(Buffer.from(finish.static));
    this.mixKey(dh(this.ephemeral.priv, this.clientStatic));
    const payload = this.proto.ClientPayload.decode(this.decrypt(Buffer.from(finish.payload)));
    const k = Buffer.from(hkdfSync('sha256', Buffer.alloc(0), this.salt, Buffer.alloc(0), 64));
    // The client writes with k[0:32] and reads with k[32:64].
    this.rx = { key: k.subarray(0, 32), n: 0 };
    this.tx = { key: k.subarray(32), n: 0 };
    return payload;
  }

  private transportDecrypt(frame: Buffer): Buffer {
    const rx = this.rx!;
    return gcm(false, rx.key, rx.n++, Buffer.alloc(0), Buffer.from(frame));
  }

  /** An encoded binary node → an encrypted transport frame. */
  seal(plain: Buffer): Buffer {
    const tx = this.tx!;
    return frameOf(gcm(true, tx.key, tx.n++, Buffer.alloc(0), plain));
  }
}

function frameOf(data: Buffer): Buffer {
  const out = Buffer.alloc(3 + data.length);
  out[0] = (data.length >>> 16) & 0xff;
  out[1] = (data.length >>> 8) & 0xff;
  out[2] = data.length & 0xff;
  data.copy(out, 3);
  return out;
}
