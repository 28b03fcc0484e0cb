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

/** A SignalParty as JSON, for the fake's state file (keys in base64; sessions as libsignal serializes them). */
export interface SignalPartyState {
  identity: [string, string];
  registrationId: number;
  signedPreKey: { id: number; pair: [string, string]; signature: string };
  preKeys: Array<[number, string, string]>;
  nextPreKey: number;
  sessions: Array<[string, unknown]>;
}

const b64 = (b: Buffer) => b.toString('base64');
const unb64 = (s: string) => Buffer.from(s, 'base64');

export class SignalParty {
  readonly identity: SignalKeyPair;
  readonly registrationId: number;
  private readonly signedPreKey: { id: number; pair: SignalKeyPair; signature: Buffer };
  private readonly preKeys = new Map<number, SignalKeyPair>();
  private nextPreKey = 1;
  // libsignal's SessionRecord.serialize() returns a JSON-able object (its .d.ts says Uint8Array).
  private readonly sessions = new Map<string, Uint8Array>();
  private readonly storage: SignalStorage;

  constructor(state?: SignalPartyState) {
    if (state) {
      this.identity = { pubKey: unb64(state.identity[0]), privKey: unb64(state.identity[1]) };
      this.registrationId = state.registrationId;
      const sp = state.signedPreKey;
      this.signedPreKey = { id: sp.id, pair: { pubKey: unb64(sp.pair[0]), privKey: unb64(sp.pair[1]) }, signature: unb64(sp.signature) };
      for (const [id, pub, priv] of state.preKeys) this.preKeys.set(id, { pubKey: unb64(pub), privKey: unb64(priv) });
      this.nextPreKey = state.nextPreKey;
      for (const [addr, rec] of state.sessions) this.sessions.set(addr, rec as Uint8Array);
    } else {
      this.identity = keyPair();
      this.registrationId = randomInt(1, 16380);
      const pair = keyPair();
      this.signedPreKey = { id: 1, pair, signature: Buffer.from(calculateSignature(this.identity.privKey, pair.pubKey)) };
    }
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

  toJSON(): SignalPartyState {
    const sp = this.signedPreKey;
    return {
      identity: [b64(this.identity.pubKey), b64(this.identity.privKey)],
      registrationId: this.registrationId,
      signedPreKey: { id: sp.id, pair: [b64(sp.pair.pubKey), b64(sp.pair.privKey)], signature: b64(sp.signature) },
      preKeys: [...this.preKeys].map(([id, k]) => [id, b64(k.pubKey), b64(k.privKey)]),
      nextPreKey: this.nextPreKey,
      sessions: [...this.sessions],
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
