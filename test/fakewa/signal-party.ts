// A Signal identity with its own pre-keys and sessions (libsignal, as Baileys uses it): a contact's phone, or the line's phone.
import { ProtocolAddress, SessionBuilder, SessionCipher, SessionRecord, type SignalStorage } from 'libsignal';
import { calculateSignature, generateKeyPair } from 'libsignal/src/curve.js';
import { randomInt } from 'node:crypto';

interface SignalKeyPair {
  pubKey: Buffer;
  privKey: Buffer;
}
const keyPair = (): SignalKeyPair => {
  const k = generateKeyPair();
  return { pubKey: Buffer.from(k.pubKey), privKey: Buffer.from(k.privKey) };
};

/** What the key IQ hands out for one device (32-byte keys, as on the wire). */
export interface Bundle {
  registrationId: number;
  identity: Buffer;
  signedPreKey: { id: number; pub: Buffer; signature: Buffer };
  preKey?: { id: number; pub: Buffer };
}

export class SignalParty {
  readonly identity = keyPair();
  readonly registrationId = randomInt(1, 16380);
  private readonly signedPreKey: { id: number; pair: SignalKeyPair; signature: Buffer };
  private readonly preKeys = new Map<number, SignalKeyPair>();
  private nextPreKey = 1;
  private readonly sessions = new Map<string, Uint8Array>();
  private readonly storage: SignalStorage;

  constructor() {
    const pair = keyPair();
    this.signedPreKey = { id: 1, pair, signature: Buffer.from(calculateSignature(this.identity.privKey, pair.pubKey)) };
    const sessions = this.sessions;
    this.storage = {
      loadSession: async (id) => {
        const s = sessions.get(id);
        return s ? SessionRecord.deserialize(s) : undefined;
      },
      storeSession: async (id, rec) => {
        sessions.set(id, rec.serialize());
      },
      isTrustedIdentity: () => true,
      loadPreKey: async (id) => this.preKeys.get(Number(id)),
      removePreKey: (id) => {
        this.preKeys.delete(Number(id));
      },
      loadSignedPreKey: () => this.signedPreKey.pair,
      getOurRegistrationId: () => this.registrationId,
      getOurIdentity: () => this.identity,
    };
  }

  /** Our bundle, with a fresh one-time pre-key. */
  bundle(): Bundle {
    const id = this.nextPreKey++;
    const pair = keyPair();
    this.preKeys.set(id, pair);
    return {
      registrationId: this.registrationId,
      identity: this.identity.pubKey.subarray(1),
      signedPreKey: { id: this.signedPreKey.id, pub: this.signedPreKey.pair.pubKey.subarray(1), signature: this.signedPreKey.signature },
      preKey: { id, pub: pair.pubKey.subarray(1) },
    };
  }

  async decrypt(peer: ProtocolAddress, type: string, ciphertext: Buffer): Promise<Buffer> {
    const cipher = new SessionCipher(this.storage, peer);
    return type === 'pkmsg' ? cipher.decryptPreKeyWhisperMessage(ciphertext) : cipher.decryptWhisperMessage(ciphertext);
  }

  /** Encrypts to a peer, starting a session from its bundle when there is none yet. */
  async encrypt(peer: ProtocolAddress, data: Buffer, bundle: () => Bundle | undefined): Promise<{ type: 'pkmsg' | 'msg'; ciphertext: Buffer }> {
    if (!this.sessions.has(peer.toString())) {
      const b = bundle();
      if (!b) throw new Error(`no pre-key bundle for ${peer.toString()}`);
      const t = (k: Buffer) => Buffer.concat([Buffer.from([5]), k]);
      await new SessionBuilder(this.storage, peer).initOutgoing({
        registrationId: b.registrationId,
        identityKey: t(b.identity),
        signedPreKey: { keyId: b.signedPreKey.id, publicKey: t(b.signedPreKey.pub), signature: b.signedPreKey.signature },
        // libsignal accepts a bundle without a one-time pre-key; its .d.ts says otherwise.
        preKey: (b.preKey ? { keyId: b.preKey.id, publicKey: t(b.preKey.pub) } : undefined)!,
      });
    }
    const { type, body } = await new SessionCipher(this.storage, peer).encrypt(data);
    return { type: type === 3 ? 'pkmsg' : 'msg', ciphertext: Buffer.from(body, 'binary') };
  }
}
