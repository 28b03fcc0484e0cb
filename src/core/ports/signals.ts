/**
 * Small notices to every node serving the store: "drop what you cached of
 * cliente 7", later "wake the event stream". Delivery is at most once and
 * unordered across nodes; what a subscriber may not miss it rebuilds on
 * `gap`. A publisher's own subscribers hear it at once, before `publish`
 * returns, so the node that made a change never reads its own stale copy.
 */
export interface SignalHandler {
  message(payload: string): void;
  /** Deliveries may have been lost (the listening connection dropped, or came back): drop everything derived from them. */
  gap(): void;
}

export interface Signals {
  /** Tells every node, this one first (synchronously). Never throws: a notice that cannot leave is lost, and receivers' TTLs bound that. */
  publish(channel: string, payload: string): Promise<void>;
  /** Returns the unsubscribe. */
  subscribe(channel: string, handler: SignalHandler): () => void;
  close(): Promise<void>;
}
