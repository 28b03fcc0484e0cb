/**
 * Versioned schema for the SQLite store. Append only: a shipped migration is
 * never edited, a change is a new entry. Applied inside one transaction each,
 * recorded in schema_migrations.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'accounts, celulares, audit, balances, messages, kv',
    sql: `
      CREATE TABLE clientes (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        nombre TEXT NOT NULL,
        email TEXT NOT NULL,
        estado TEXT NOT NULL CHECK (estado IN ('activo','suspendido','baja')),
        plan TEXT NOT NULL CHECK (plan IN ('medido','ilimitado')),
        max_celulares INTEGER,
        saldo_global INTEGER NOT NULL DEFAULT 0 CHECK (saldo_global >= 0),
        key_hash TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );

      CREATE TABLE celulares (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        cliente_id INTEGER NOT NULL REFERENCES clientes(id),
        numero TEXT NOT NULL UNIQUE,
        nombre_interno TEXT,
        estado TEXT NOT NULL CHECK (estado IN ('activo','suspendido','desconectado')),
        saldo_actual INTEGER NOT NULL DEFAULT 0 CHECK (saldo_actual >= 0),
        max_envios_por_minuto INTEGER NOT NULL,
        max_envios_por_hora INTEGER NOT NULL,
        max_envios_por_dia INTEGER,
        hora_inicio_permitido TEXT NOT NULL,
        hora_fin_permitido TEXT NOT NULL,
        gateway_instancia TEXT UNIQUE,
        gateway_token_hash TEXT UNIQUE,
        legacy_token_hash TEXT UNIQUE,
        key_hash TEXT NOT NULL,
        last_status_check INTEGER,
        last_status TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX celulares_cliente ON celulares(cliente_id);

      -- Who did what and when; rows outlive the objects they name (hard deletes).
      CREATE TABLE auditoria (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        fecha INTEGER NOT NULL,
        actor TEXT NOT NULL,
        accion TEXT NOT NULL,
        objeto_tipo TEXT NOT NULL,
        objeto_id INTEGER,
        cliente_id INTEGER,
        detalle TEXT NOT NULL
      );
      CREATE INDEX auditoria_cliente ON auditoria(cliente_id, id);

      -- Every balance change and its reason.
      CREATE TABLE movimientos_saldo (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        fecha INTEGER NOT NULL,
        cliente_id INTEGER NOT NULL,
        celular_id INTEGER,
        monto INTEGER NOT NULL,
        saldo_resultante INTEGER NOT NULL,
        motivo TEXT NOT NULL,
        actor TEXT NOT NULL
      );
      CREATE INDEX movimientos_cliente ON movimientos_saldo(cliente_id, id);

      -- Sent-message history (docs/design.md §8). Filled by the send path.
      CREATE TABLE mensajes (
        msg_id TEXT PRIMARY KEY,
        cliente_id INTEGER NOT NULL,
        celular_id INTEGER NOT NULL,
        destinatario TEXT NOT NULL,
        tipo TEXT NOT NULL,
        modo TEXT NOT NULL CHECK (modo IN ('cola','directo')),
        estado TEXT NOT NULL CHECK (estado IN ('pendiente','enviado','entregado','leido','error')),
        texto TEXT,
        media TEXT,
        gateway_msg_id TEXT,
        error TEXT,
        cobrado INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        enviado_at INTEGER,
        entregado_at INTEGER,
        leido_at INTEGER
      );
      CREATE INDEX mensajes_cliente_fecha ON mensajes(cliente_id, created_at);

      CREATE TABLE kv (
        ns TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (ns, key)
      );
    `,
  },
  {
    version: 2,
    name: 'send queue columns and history indexes',
    sql: `
      -- What the gateway needs to send (url, temp file, mime, filename, caption, ptt, preview_url).
      ALTER TABLE mensajes ADD COLUMN payload TEXT;
      -- Which balance paid for the send ('celular' or 'global'); NULL when nothing was charged.
      ALTER TABLE mensajes ADD COLUMN cargo TEXT;
      ALTER TABLE mensajes ADD COLUMN intentos INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE mensajes ADD COLUMN proximo_intento_at INTEGER;
      -- A worker's claim on a queued message; an expired lease is taken again after a crash.
      ALTER TABLE mensajes ADD COLUMN lease_until INTEGER;
      ALTER TABLE mensajes ADD COLUMN expira_at INTEGER;
      -- Queued messages of the line still pending, kept with every change of estado, so the
      -- queue-depth limit costs one row instead of a count over the backlog.
      ALTER TABLE celulares ADD COLUMN pendientes INTEGER NOT NULL DEFAULT 0 CHECK (pendientes >= 0);

      -- The queue: pending messages of a line in arrival order (an index entry ends with the rowid).
      CREATE INDEX mensajes_cola ON mensajes(celular_id) WHERE estado = 'pendiente' AND modo = 'cola';
      CREATE INDEX mensajes_gateway ON mensajes(gateway_msg_id) WHERE gateway_msg_id IS NOT NULL;
      -- Caps: sends of a line in the last minute, hour, day.
      CREATE INDEX mensajes_celular_enviado ON mensajes(celular_id, enviado_at) WHERE enviado_at IS NOT NULL;
      -- History filters, newest first.
      CREATE INDEX mensajes_cliente_estado_fecha ON mensajes(cliente_id, estado, created_at);
      CREATE INDEX mensajes_cliente_dest_fecha ON mensajes(cliente_id, destinatario, created_at);
    `,
  },
  {
    version: 3,
    name: 'history indexes for a line within its client',
    sql: `
      -- History always filters on cliente_id. With celular_id too, the planner (no ANALYZE statistics)
      -- counted through a (cliente_id, ...) index and read every row of the client or of the line:
      -- 0.15-1 s a page at 1M messages (bench/historial.mjs). A celular key always names its line, so
      -- the line and the line with each other filter get an index whose equality columns win the choice:
      -- the count is covered, the page read in order.
      CREATE INDEX mensajes_cliente_celular_fecha ON mensajes(cliente_id, celular_id, created_at);
      CREATE INDEX mensajes_cliente_celular_estado_fecha ON mensajes(cliente_id, celular_id, estado, created_at);
      CREATE INDEX mensajes_cliente_celular_dest_fecha ON mensajes(cliente_id, celular_id, destinatario, created_at);
    `,
  },
  {
    version: 4,
    name: 'webhooks: configuration, outbox, attempts',
    sql: `
      -- One configuration per client. The secret is kept to sign deliveries (never returned).
      -- The prev_* columns keep the configuration the last set replaced (webhook_restaurar).
      CREATE TABLE webhooks (
        cliente_id INTEGER PRIMARY KEY,
        url TEXT NOT NULL,
        secret TEXT,
        eventos TEXT NOT NULL,
        activo INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        prev TEXT
      );

      -- The outbox: one row per event to deliver; the id is the webhook-id of every attempt.
      CREATE TABLE webhook_entregas (
        id TEXT PRIMARY KEY,
        cliente_id INTEGER NOT NULL,
        evento TEXT NOT NULL,
        body TEXT NOT NULL,
        estado TEXT NOT NULL CHECK (estado IN ('pendiente','entregado','fallido')),
        intentos INTEGER NOT NULL DEFAULT 0,
        proximo_intento_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        entregado_at INTEGER,
        ultimo_error TEXT
      );
      CREATE INDEX webhook_entregas_cola ON webhook_entregas(cliente_id, proximo_intento_at) WHERE estado = 'pendiente';
      CREATE INDEX webhook_entregas_cliente ON webhook_entregas(cliente_id, created_at);

      CREATE TABLE webhook_intentos (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        entrega_id TEXT NOT NULL,
        n INTEGER NOT NULL,
        fecha INTEGER NOT NULL,
        status INTEGER,
        duracion_ms INTEGER NOT NULL,
        error TEXT
      );
      CREATE INDEX webhook_intentos_entrega ON webhook_intentos(entrega_id, n);
    `,
  },
  {
    version: 5,
    name: 'event journal',
    sql: `
      -- Every event, written in the same transaction as the change it reports, so a crash can
      -- never keep the change and lose the event. The webhook dispatcher moves them to its
      -- outbox (webhook_entregas) and deletes them.
      CREATE TABLE eventos (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        cliente_id INTEGER NOT NULL,
        celular_id INTEGER,
        evento TEXT NOT NULL,
        data TEXT NOT NULL,
        fecha INTEGER NOT NULL
      );
    `,
  },
  {
    version: 6,
    name: 'early receipts and inbound dedupe',
    sql: `
      -- Receipts that arrive before the send they acknowledge is recorded (a fast ack racing
      -- the gateway's answer): parked here and applied when the send is marked sent.
      CREATE TABLE acuses_pendientes (
        gateway_msg_id TEXT NOT NULL,
        estado TEXT NOT NULL CHECK (estado IN ('entregado','leido','error')),
        error TEXT,
        at INTEGER NOT NULL,
        PRIMARY KEY (gateway_msg_id, estado)
      );
      CREATE INDEX acuses_pendientes_at ON acuses_pendientes(at);

      -- Gateway message keys already journaled as incoming messages: a gateway's retry of the
      -- same message is dropped; a different message (another key) never is.
      CREATE TABLE entrantes_vistos (
        clave TEXT PRIMARY KEY,
        at INTEGER NOT NULL
      );
      CREATE INDEX entrantes_vistos_at ON entrantes_vistos(at);
    `,
  },
  {
    version: 7,
    name: 'linked sessions',
    sql: `
      -- 1 while the line's session holds a link (it was connected and has not been logged out
      -- since): a stopped session of such a line is started again by the health check.
      ALTER TABLE celulares ADD COLUMN vinculado INTEGER NOT NULL DEFAULT 0;
      UPDATE celulares SET vinculado = 1 WHERE last_status = 'connected';
    `,
  },
  {
    version: 8,
    name: 'send slots for exact caps; expiring kv entries',
    sql: `
      -- A send's place in its line's caps. Set when the send is claimed (a direct send at its
      -- acceptance, a queued one with its lease) to the end of that claim, so a send in flight
      -- counts in every window whatever its mode; set to enviado_at once sent; cleared when it
      -- never went out. One index range per window, bounded by the cap, not by history.
      ALTER TABLE mensajes ADD COLUMN cupo_at INTEGER;
      UPDATE mensajes SET cupo_at = enviado_at WHERE enviado_at IS NOT NULL;
      CREATE INDEX mensajes_celular_cupo ON mensajes(celular_id, cupo_at) WHERE cupo_at IS NOT NULL;
      DROP INDEX mensajes_celular_enviado;

      -- What an adapter must remember only for a while (the simulator's idempotency memory)
      -- expires, so its bookkeeping stays bounded however many messages go through.
      ALTER TABLE kv ADD COLUMN expira_at INTEGER;
      CREATE INDEX kv_expira ON kv(expira_at) WHERE expira_at IS NOT NULL;
    `,
  },
  {
    version: 9,
    name: 'history counts',
    sql: `
      -- How many messages each line of each client holds in each state, kept by triggers in the
      -- transaction of every insert, state change and delete, so a history page's total without
      -- a date or recipient filter is a sum over a few rows instead of a count over millions.
      CREATE TABLE conteos_mensajes (
        cliente_id INTEGER NOT NULL,
        celular_id INTEGER NOT NULL,
        estado TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (cliente_id, celular_id, estado)
      ) WITHOUT ROWID;
      INSERT INTO conteos_mensajes (cliente_id, celular_id, estado, n)
        SELECT cliente_id, celular_id, estado, COUNT(*) FROM mensajes GROUP BY cliente_id, celular_id, estado;
      CREATE INDEX conteos_mensajes_estado ON conteos_mensajes(cliente_id, estado);

      CREATE TRIGGER conteos_mensajes_insert AFTER INSERT ON mensajes BEGIN
        INSERT INTO conteos_mensajes (cliente_id, celular_id, estado, n) VALUES (NEW.cliente_id, NEW.celular_id, NEW.estado, 1)
          ON CONFLICT (cliente_id, celular_id, estado) DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER conteos_mensajes_estado AFTER UPDATE OF estado ON mensajes WHEN OLD.estado IS NOT NEW.estado BEGIN
        UPDATE conteos_mensajes SET n = n - 1 WHERE cliente_id = OLD.cliente_id AND celular_id = OLD.celular_id AND estado = OLD.estado;
        INSERT INTO conteos_mensajes (cliente_id, celular_id, estado, n) VALUES (NEW.cliente_id, NEW.celular_id, NEW.estado, 1)
          ON CONFLICT (cliente_id, celular_id, estado) DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER conteos_mensajes_delete AFTER DELETE ON mensajes BEGIN
        UPDATE conteos_mensajes SET n = n - 1 WHERE cliente_id = OLD.cliente_id AND celular_id = OLD.celular_id AND estado = OLD.estado;
      END;

      -- And how many messages each client accepted in each quarter of an hour (UTC): every zone's
      -- midnight falls on such a boundary, so a page limited to whole days sums at most 96 rows a
      -- day instead of counting every message in the range.
      CREATE TABLE conteos_cuartos (
        cliente_id INTEGER NOT NULL,
        cuarto INTEGER NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (cliente_id, cuarto)
      ) WITHOUT ROWID;
      INSERT INTO conteos_cuartos (cliente_id, cuarto, n)
        SELECT cliente_id, created_at / 900000, COUNT(*) FROM mensajes GROUP BY cliente_id, created_at / 900000;
      CREATE TRIGGER conteos_cuartos_insert AFTER INSERT ON mensajes BEGIN
        INSERT INTO conteos_cuartos (cliente_id, cuarto, n) VALUES (NEW.cliente_id, NEW.created_at / 900000, 1)
          ON CONFLICT (cliente_id, cuarto) DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER conteos_cuartos_delete AFTER DELETE ON mensajes BEGIN
        UPDATE conteos_cuartos SET n = n - 1 WHERE cliente_id = OLD.cliente_id AND cuarto = OLD.created_at / 900000;
      END;
    `,
  },
  {
    version: 10,
    name: 'direct sends in flight',
    sql: `
      -- Direct sends still pendiente: at most those in flight, plus any a crash stranded. The
      -- start-up and periodic recovery reads them by their slot's end, whatever the history holds.
      CREATE INDEX mensajes_directo_pendiente ON mensajes(cupo_at) WHERE estado = 'pendiente' AND modo = 'directo';
    `,
  },
  {
    version: 11,
    name: 'gateway servers',
    sql: `
      -- The gateway servers (Evolution API or WAHA processes) lines are spread over. The key is
      -- the server's global API key: kept to call it, never answered by the API.
      CREATE TABLE gateway_servidores (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        nombre TEXT NOT NULL UNIQUE,
        tipo TEXT NOT NULL,
        url TEXT NOT NULL,
        key TEXT NOT NULL,
        estado TEXT NOT NULL DEFAULT 'activo' CHECK (estado IN ('activo','drenando')),
        max_lineas INTEGER CHECK (max_lineas IS NULL OR max_lineas >= 1),
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      -- The server that holds a line's instance; null until one is chosen.
      ALTER TABLE celulares ADD COLUMN servidor_id INTEGER REFERENCES gateway_servidores(id);
      CREATE INDEX celulares_servidor ON celulares(servidor_id);
    `,
  },
  {
    version: 12,
    name: 'idempotency keys',
    sql: `
      -- A client's Idempotency-Key, bound to the send it named in the transaction that accepted it
      -- (core/sending/idempotency.ts). status and body: the answer once final (status NULL while a direct
      -- send is in flight, body then holding the part of the answer known at acceptance). huella:
      -- the hash of the request, so the key with another request is refused. Kept until expira_at
      -- (24 h); each binding acceptance removes a few expired rows through the expiry index.
      CREATE TABLE idempotencia (
        cliente_id INTEGER NOT NULL,
        clave TEXT NOT NULL,
        huella TEXT NOT NULL,
        msg_id TEXT NOT NULL,
        status INTEGER,
        body TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expira_at INTEGER NOT NULL,
        PRIMARY KEY (cliente_id, clave)
      );
      CREATE INDEX idempotencia_expira ON idempotencia(expira_at);
    `,
  },
  {
    version: 13,
    name: 'webhook listeners',
    sql: `
      -- Temporary extra destinations of a client's events (\`webhook listen\`), each with its own
      -- signing secret, alive while expira_at is renewed. Expired rows are removed when the
      -- client adds another; meanwhile only a removal by id reads one (to answer it had expired).
      CREATE TABLE webhook_escuchas (
        id TEXT PRIMARY KEY,
        cliente_id INTEGER NOT NULL,
        url TEXT NOT NULL,
        secret TEXT NOT NULL,
        eventos TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expira_at INTEGER NOT NULL
      );
      CREATE INDEX webhook_escuchas_cliente ON webhook_escuchas(cliente_id, expira_at);
    `,
  },
  {
    version: 14,
    name: 'inbox',
    sql: `
      -- Incoming messages (docs/design.md §10), written in the transaction that records their
      -- gateway key in entrantes_vistos, so a gateway's repeat is kept once. media: JSON metadata
      -- (mime, filename, bytes, url, ptt), never the bytes. fecha: when the gateway says it was
      -- sent; created_at: when pasarela recorded it, the inbox's order, date filters and retention.
      -- Rows outlive a deleted line, like its sent messages, until the retention removes them.
      CREATE TABLE recibidos (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        cliente_id INTEGER NOT NULL,
        celular_id INTEGER NOT NULL,
        de TEXT NOT NULL,
        tipo TEXT NOT NULL,
        texto TEXT,
        media TEXT,
        gateway_msg_id TEXT,
        fecha INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      );
      -- Every filter of a page (the client, with or without the line and the sender) is an
      -- equality prefix; created_at then the rowid give the page's order and its date range.
      CREATE INDEX recibidos_cliente_fecha ON recibidos(cliente_id, created_at);
      CREATE INDEX recibidos_cliente_de_fecha ON recibidos(cliente_id, de, created_at);
      CREATE INDEX recibidos_cliente_celular_fecha ON recibidos(cliente_id, celular_id, created_at);
      CREATE INDEX recibidos_cliente_celular_de_fecha ON recibidos(cliente_id, celular_id, de, created_at);
      -- The retention's purge: the oldest rows of every client, a batch at a time.
      CREATE INDEX recibidos_created ON recibidos(created_at);
    `,
  },
  {
    version: 15,
    name: 'inbox counts',
    sql: `
      -- How many inbox rows each line of each client holds, and how many it recorded in each UTC
      -- quarter hour, kept by triggers in the transaction of every insert and delete (the retention's
      -- purge included), so an inbox page's total without a sender filter is a sum over a few rows
      -- instead of a count over every row of the client (docs/design.md §10). Every zone's midnight is
      -- on a quarter hour, so whole days in any zone are whole quarters. A quarter whose rows are all
      -- purged loses its row; a line's total stays (one per line).
      CREATE TABLE conteos_recibidos (
        cliente_id INTEGER NOT NULL,
        celular_id INTEGER NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (cliente_id, celular_id)
      ) WITHOUT ROWID;
      CREATE TABLE conteos_recibidos_cuartos (
        cliente_id INTEGER NOT NULL,
        celular_id INTEGER NOT NULL,
        cuarto INTEGER NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (cliente_id, celular_id, cuarto)
      ) WITHOUT ROWID;
      -- Days of every line of a client: its quarters in order, n covered.
      CREATE INDEX conteos_recibidos_cuartos_cliente ON conteos_recibidos_cuartos(cliente_id, cuarto, n);
      INSERT INTO conteos_recibidos (cliente_id, celular_id, n)
        SELECT cliente_id, celular_id, COUNT(*) FROM recibidos GROUP BY cliente_id, celular_id;
      INSERT INTO conteos_recibidos_cuartos (cliente_id, celular_id, cuarto, n)
        SELECT cliente_id, celular_id, created_at / 900000, COUNT(*) FROM recibidos GROUP BY cliente_id, celular_id, created_at / 900000;

      CREATE TRIGGER conteos_recibidos_insert AFTER INSERT ON recibidos BEGIN
        INSERT INTO conteos_recibidos (cliente_id, celular_id, n) VALUES (NEW.cliente_id, NEW.celular_id, 1)
          ON CONFLICT (cliente_id, celular_id) DO UPDATE SET n = n + 1;
        INSERT INTO conteos_recibidos_cuartos (cliente_id, celular_id, cuarto, n) VALUES (NEW.cliente_id, NEW.celular_id, NEW.created_at / 900000, 1)
          ON CONFLICT (cliente_id, celular_id, cuarto) DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER conteos_recibidos_delete AFTER DELETE ON recibidos BEGIN
        UPDATE conteos_recibidos SET n = n - 1 WHERE cliente_id = OLD.cliente_id AND celular_id = OLD.celular_id;
        UPDATE conteos_recibidos_cuartos SET n = n - 1
          WHERE cliente_id = OLD.cliente_id AND celular_id = OLD.celular_id AND cuarto = OLD.created_at / 900000;
        DELETE FROM conteos_recibidos_cuartos
          WHERE cliente_id = OLD.cliente_id AND celular_id = OLD.celular_id AND cuarto = OLD.created_at / 900000 AND n = 0;
      END;
    `,
  },
  {
    version: 16,
    name: 'receipts bound to their line',
    sql: `
      -- A parked receipt belongs to the line whose instance reported it: markSent applies it only to
      -- that line's message, and each line may park a bounded number (core/billing/ledger.ts PARKED_PER_LINE).
      -- Rows parked before this version have none and apply as before.
      ALTER TABLE acuses_pendientes ADD COLUMN celular_id INTEGER;
      CREATE INDEX acuses_pendientes_celular ON acuses_pendientes(celular_id, at);
    `,
  },
  {
    version: 17,
    name: 'webhook delivery claims',
    sql: `
      -- A delivery being attempted is claimed (reclamo: who, reclamo_hasta: until when), in the one
      -- statement that picks it, and the claim is cleared with the attempt's outcome: a due delivery is
      -- attempted once per due time whoever reads it; one a dead node claimed is due again at reclamo_hasta.
      ALTER TABLE webhook_entregas ADD COLUMN reclamo TEXT;
      ALTER TABLE webhook_entregas ADD COLUMN reclamo_hasta INTEGER;
      -- The claims in force, for the next time a claimed delivery may be taken again.
      CREATE INDEX webhook_entregas_reclamo ON webhook_entregas(cliente_id, reclamo_hasta) WHERE reclamo_hasta IS NOT NULL;
    `,
  },
  {
    version: 18,
    name: 'failure class beside the error text',
    sql: `
      -- What became of a failed message, for code to read (core/sending/failure-class.ts, D-65); the text is
      -- for people. Rows that failed before this version are classed from what is known of them: sent
      -- then failed is the network's report; otherwise the wordings this service wrote; else unknown.
      ALTER TABLE mensajes ADD COLUMN error_clase TEXT;
      UPDATE mensajes SET error_clase = CASE
        WHEN enviado_at IS NOT NULL THEN 'fallido'
        WHEN error LIKE 'refused for good: %' THEN 'rechazado'
        WHEN error LIKE 'not sent: %' OR error LIKE 'expired%' OR error = 'the celular was deleted' THEN 'no_enviado'
        ELSE 'incierto' END
        WHERE estado = 'error';
    `,
  },
  {
    version: 19,
    name: 'one event log, also the webhook deliveries',
    sql: `
      -- D-69: every event of every client is one row, written with the change it reports and kept
      -- at least 72 h once nothing is left to deliver. The row of an event the client's configuration
      -- wanted is also its delivery (entrega: pendiente, entregado, fallido; NULL when nobody wanted
      -- it), claimed and recorded in place: the journal's move and the outbox's second insert are gone.
      -- An event's id is 'evt_' || prefix || the sequence in 24 hex digits (core/events/event-log.ts).
      INSERT OR IGNORE INTO kv (ns, key, value) VALUES ('store', 'eventos_prefijo', lower(hex(randomblob(4))));
      CREATE TABLE eventos_log (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        cliente_id INTEGER NOT NULL,
        celular_id INTEGER,
        evento TEXT NOT NULL,
        data TEXT NOT NULL,
        fecha INTEGER NOT NULL,
        entrega TEXT CHECK (entrega IN ('pendiente','entregado','fallido')),
        intentos INTEGER NOT NULL DEFAULT 0,
        proximo_intento_at INTEGER NOT NULL,
        entregado_at INTEGER,
        ultimo_error TEXT,
        -- The last attempt's answer and time: a delivered event's attempt needs no row of its own.
        ultimo_status INTEGER,
        ultima_duracion_ms INTEGER,
        reclamo TEXT,
        reclamo_hasta INTEGER,
        legado TEXT
      );
      -- The outbox's history first, in the order it was made: each keeps its body's fields.
      INSERT INTO eventos_log (cliente_id, celular_id, evento, data, fecha, entrega, intentos, proximo_intento_at, entregado_at, ultimo_error, legado)
        SELECT cliente_id, json_extract(body, '$.celular_id'), evento, COALESCE(json_extract(body, '$.data'), '{}'), created_at,
               estado, intentos, proximo_intento_at, entregado_at, ultimo_error, id
        FROM webhook_entregas ORDER BY created_at, rowid;
      -- Then what the journal still held, routed as the move would have: to the configuration it has now.
      INSERT INTO eventos_log (cliente_id, celular_id, evento, data, fecha, entrega, proximo_intento_at)
        SELECT e.cliente_id, e.celular_id, e.evento, e.data, e.fecha,
               (SELECT 'pendiente' FROM webhooks w WHERE w.cliente_id = e.cliente_id AND w.activo = 1 AND w.url != ''
                  AND EXISTS (SELECT 1 FROM json_each(w.eventos) WHERE value IN ('all', e.evento))), e.fecha
        FROM eventos e ORDER BY e.seq;
      CREATE INDEX eventos_log_legado ON eventos_log(legado) WHERE legado IS NOT NULL;
      UPDATE webhook_intentos SET entrega_id = (
        SELECT 'evt_' || (SELECT value FROM kv WHERE ns = 'store' AND key = 'eventos_prefijo') || printf('%024x', l.seq)
        FROM eventos_log l WHERE l.legado = webhook_intentos.entrega_id)
        WHERE EXISTS (SELECT 1 FROM eventos_log l WHERE l.legado = webhook_intentos.entrega_id);
      DROP INDEX eventos_log_legado;
      ALTER TABLE eventos_log DROP COLUMN legado;
      DROP TABLE webhook_entregas;
      DROP TABLE eventos;
      ALTER TABLE eventos_log RENAME TO eventos;
      -- A client's events in order: its stream, its listeners' copies, its deliveries' list.
      CREATE INDEX eventos_cliente ON eventos(cliente_id, seq);
      -- The deliveries to make, by due time; and the claims in force (for when a claimed one is due again).
      CREATE INDEX eventos_cola ON eventos(cliente_id, proximo_intento_at) WHERE entrega = 'pendiente';
      CREATE INDEX eventos_reclamo ON eventos(cliente_id, reclamo_hasta) WHERE reclamo_hasta IS NOT NULL;
      -- A listener's cursor: the last event it was given (0: none yet).
      ALTER TABLE webhook_escuchas ADD COLUMN visto_seq INTEGER NOT NULL DEFAULT 0;
      UPDATE webhook_escuchas SET visto_seq = (SELECT COALESCE(MAX(seq), 0) FROM eventos);
      -- Every client's live listeners, read by the dispatcher each second: expired rows of a client that adds none again stay behind.
      CREATE INDEX webhook_escuchas_expira ON webhook_escuchas(expira_at);
    `,
  },
  {
    version: 20,
    name: 'a narrow write set: mensajes written once, its changing state in side tables',
    sql: `
      -- D-74: a message's row is written once with four indexes (its key and three for history);
      -- every column that changes after the insert is read through one of these small tables
      -- instead, written and deleted by the statements that change that state.
      --
      -- The queue: pending queued messages, a line's in arrival order (seq), left when the message
      -- leaves pendiente. seq is the table's own rowid alias, so VACUUM keeps it.
      CREATE TABLE cola (
        seq INTEGER PRIMARY KEY,
        msg_id TEXT NOT NULL UNIQUE,
        celular_id INTEGER NOT NULL
      );
      CREATE INDEX cola_linea ON cola(celular_id);
      INSERT INTO cola (msg_id, celular_id) SELECT msg_id, celular_id FROM mensajes WHERE estado = 'pendiente' AND modo = 'cola' ORDER BY rowid;
      -- Direct sends still pendiente, by the end of their slot (core/sending/direct-recovery.ts).
      CREATE TABLE directos (
        msg_id TEXT PRIMARY KEY,
        cupo_at INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX directos_cupo ON directos(cupo_at);
      INSERT INTO directos (msg_id, cupo_at) SELECT msg_id, cupo_at FROM mensajes WHERE estado = 'pendiente' AND modo = 'directo' AND cupo_at IS NOT NULL;
      -- Caps slots (core/sending/caps.ts): the value of mensajes.cupo_at while it is set. A slot older than
      -- the longest window (a day) counts in none, so a line's are pruned when it takes a new one.
      -- Only the slots of the last two days before the newest are copied: the newest is at most a
      -- claim's hold past the time this runs, so the older ones count in no window now, and a line's
      -- first send after the upgrade does not prune its whole history.
      CREATE TABLE cupos (
        msg_id TEXT PRIMARY KEY,
        celular_id INTEGER NOT NULL,
        cupo_at INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX cupos_linea ON cupos(celular_id, cupo_at);
      INSERT INTO cupos (msg_id, celular_id, cupo_at) SELECT msg_id, celular_id, cupo_at FROM mensajes
        WHERE cupo_at > (SELECT MAX(cupo_at) FROM mensajes) - 2 * 86400000;
      -- The gateway's id of a sent message, for its receipts: set once, kept as long as the message.
      CREATE TABLE gateway_ids (
        gateway_msg_id TEXT NOT NULL,
        celular_id INTEGER NOT NULL,
        msg_id TEXT NOT NULL,
        PRIMARY KEY (gateway_msg_id, celular_id, msg_id)
      ) WITHOUT ROWID;
      INSERT INTO gateway_ids (gateway_msg_id, celular_id, msg_id) SELECT gateway_msg_id, celular_id, msg_id FROM mensajes WHERE gateway_msg_id IS NOT NULL;

      DROP INDEX mensajes_cola;
      DROP INDEX mensajes_directo_pendiente;
      DROP INDEX mensajes_celular_cupo;
      DROP INDEX mensajes_gateway;
      -- History filters on estado read the client's (or the line's) dates and skip other states;
      -- a line with a recipient reads the recipient's (history.ts).
      DROP INDEX mensajes_cliente_estado_fecha;
      DROP INDEX mensajes_cliente_celular_estado_fecha;
      DROP INDEX mensajes_cliente_celular_dest_fecha;
    `,
  },
  {
    version: 21,
    name: 'quarter-hour counts by estado',
    sql: `
      -- D-74: a history page with an estado and a date range totals from the quarter-hour counts
      -- instead of reading every row of the range (no index holds estado). estado joins the key of
      -- the existing counts rather than a table of its own: an insert and a delete still write one
      -- counts row, and only a change of state adds two (-1 its old state, +1 its new one). Last in
      -- the key, so a total of all states still reads one key range.
      DROP TRIGGER conteos_cuartos_insert;
      DROP TRIGGER conteos_cuartos_delete;
      DROP TABLE conteos_cuartos;
      CREATE TABLE conteos_cuartos (
        cliente_id INTEGER NOT NULL,
        cuarto INTEGER NOT NULL,
        estado TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (cliente_id, cuarto, estado)
      ) WITHOUT ROWID;
      INSERT INTO conteos_cuartos (cliente_id, cuarto, estado, n)
        SELECT cliente_id, created_at / 900000, estado, COUNT(*) FROM mensajes GROUP BY cliente_id, created_at / 900000, estado;
      CREATE TRIGGER conteos_cuartos_insert AFTER INSERT ON mensajes BEGIN
        INSERT INTO conteos_cuartos (cliente_id, cuarto, estado, n) VALUES (NEW.cliente_id, NEW.created_at / 900000, NEW.estado, 1)
          ON CONFLICT (cliente_id, cuarto, estado) DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER conteos_cuartos_estado AFTER UPDATE OF estado ON mensajes WHEN OLD.estado IS NOT NEW.estado BEGIN
        UPDATE conteos_cuartos SET n = n - 1 WHERE cliente_id = OLD.cliente_id AND cuarto = OLD.created_at / 900000 AND estado = OLD.estado;
        INSERT INTO conteos_cuartos (cliente_id, cuarto, estado, n) VALUES (NEW.cliente_id, NEW.created_at / 900000, NEW.estado, 1)
          ON CONFLICT (cliente_id, cuarto, estado) DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER conteos_cuartos_delete AFTER DELETE ON mensajes BEGIN
        UPDATE conteos_cuartos SET n = n - 1 WHERE cliente_id = OLD.cliente_id AND cuarto = OLD.created_at / 900000 AND estado = OLD.estado;
      END;
    `,
  },
  {
    version: 22,
    name: "a message's story: who claimed it, when it failed, its ledger rows and deliveries by its id",
    sql: `
      -- Issue 36 (D-98): the facts a message's timeline needs that no row kept, written by the
      -- statements that already change the message (its claim, its failure) or record an attempt:
      -- no statement is added to any path. Messages before this version have none and show what
      -- is known. The two indexes cost one entry per ledger row and per delivery.
      ALTER TABLE mensajes ADD COLUMN nodo TEXT;
      ALTER TABLE mensajes ADD COLUMN reclamado_at INTEGER;
      ALTER TABLE mensajes ADD COLUMN error_at INTEGER;
      -- A webhook attempt's node: the failed ones' rows, and the last one on its event.
      ALTER TABLE webhook_intentos ADD COLUMN nodo TEXT;
      ALTER TABLE eventos ADD COLUMN ultimo_nodo TEXT;
      -- A message's charge and refund ('envio <msg_id>', 'reembolso <msg_id>': core/billing/recipes.ts) by their motive.
      CREATE INDEX movimientos_motivo ON movimientos_saldo(motivo);
      -- A message's deliveries by its id (the data's msg_id), only the events that are deliveries.
      CREATE INDEX eventos_mensaje ON eventos(json_extract(data, '$.msg_id')) WHERE entrega IS NOT NULL;
    `,
  },
  {
    version: 23,
    name: "charts: a line's counts per minute and quarter hour by estado, the background pass's samples",
    sql: `
      -- D-100: the charts' sends. Messages by line, creation bucket and current estado (the meaning of
      -- the other counts), per UTC minute (grano 1, kept two days) and quarter hour (grano 15, kept
      -- eight), written by the triggers of every insert, state change and delete: one upsert of its two
      -- rows on an insert, a -1 on each row by its key and one upsert (+1) on a change of state (a
      -- row-value IN list here would not be matched to the key: each change would scan). A chart reads one
      -- key range of these rows: a line's by the key, a client's minutes by cliente_id, everyone's
      -- minutes by time; clients' quarters are conteos_cuartos, read by cuarto for everyone's.
      CREATE TABLE conteos_lineas (
        celular_id INTEGER NOT NULL,
        grano INTEGER NOT NULL,
        t INTEGER NOT NULL,
        estado TEXT NOT NULL,
        n INTEGER NOT NULL,
        cliente_id INTEGER NOT NULL,
        PRIMARY KEY (celular_id, grano, t, estado)
      ) WITHOUT ROWID;
      CREATE INDEX conteos_lineas_tiempo ON conteos_lineas(grano, t);
      CREATE INDEX conteos_lineas_cliente ON conteos_lineas(cliente_id, grano, t);
      CREATE INDEX conteos_cuartos_cuarto ON conteos_cuartos(cuarto);
      INSERT INTO conteos_lineas (celular_id, grano, t, estado, n, cliente_id)
        SELECT m.celular_id, 1, m.created_at / 60000, m.estado, COUNT(*), m.cliente_id FROM clientes c CROSS JOIN mensajes m
        WHERE m.cliente_id = c.id AND m.created_at >= (SELECT COALESCE(MAX(created_at), 0) FROM mensajes) - 172800000
        GROUP BY m.celular_id, m.created_at / 60000, m.estado;
      INSERT INTO conteos_lineas (celular_id, grano, t, estado, n, cliente_id)
        SELECT m.celular_id, 15, m.created_at / 900000, m.estado, COUNT(*), m.cliente_id FROM clientes c CROSS JOIN mensajes m
        WHERE m.cliente_id = c.id AND m.created_at >= (SELECT COALESCE(MAX(created_at), 0) FROM mensajes) - 691200000
        GROUP BY m.celular_id, m.created_at / 900000, m.estado;
      CREATE TRIGGER conteos_lineas_insert AFTER INSERT ON mensajes BEGIN
        INSERT INTO conteos_lineas (celular_id, grano, t, estado, n, cliente_id)
          VALUES (NEW.celular_id, 1, NEW.created_at / 60000, NEW.estado, 1, NEW.cliente_id),
                 (NEW.celular_id, 15, NEW.created_at / 900000, NEW.estado, 1, NEW.cliente_id)
          ON CONFLICT (celular_id, grano, t, estado) DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER conteos_lineas_estado AFTER UPDATE OF estado ON mensajes WHEN OLD.estado IS NOT NEW.estado BEGIN
        UPDATE conteos_lineas SET n = n - 1 WHERE celular_id = OLD.celular_id AND grano = 1 AND t = OLD.created_at / 60000 AND estado = OLD.estado;
        UPDATE conteos_lineas SET n = n - 1 WHERE celular_id = OLD.celular_id AND grano = 15 AND t = OLD.created_at / 900000 AND estado = OLD.estado;
        INSERT INTO conteos_lineas (celular_id, grano, t, estado, n, cliente_id)
          VALUES (NEW.celular_id, 1, NEW.created_at / 60000, NEW.estado, 1, NEW.cliente_id),
                 (NEW.celular_id, 15, NEW.created_at / 900000, NEW.estado, 1, NEW.cliente_id)
          ON CONFLICT (celular_id, grano, t, estado) DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER conteos_lineas_delete AFTER DELETE ON mensajes BEGIN
        UPDATE conteos_lineas SET n = n - 1 WHERE celular_id = OLD.celular_id AND grano = 1 AND t = OLD.created_at / 60000 AND estado = OLD.estado;
        UPDATE conteos_lineas SET n = n - 1 WHERE celular_id = OLD.celular_id AND grano = 15 AND t = OLD.created_at / 900000 AND estado = OLD.estado;
      END;

      -- D-101: what only a sample shows over time: the queue's depth and oldest age, and the webhook
      -- attempts with their latency (a histogram, so nodes and buckets add up). Each node writes its
      -- own row per minute (grano 1), quarter hour (15) and hour (60) once a minute; a chart sums the
      -- nodes' attempts and takes the largest queue reading, so nothing is counted twice.
      CREATE TABLE muestras (
        grano INTEGER NOT NULL,
        t INTEGER NOT NULL,
        nodo TEXT NOT NULL,
        cola INTEGER NOT NULL,
        antiguo_s INTEGER NOT NULL,
        ok INTEGER NOT NULL,
        fallidas INTEGER NOT NULL,
        lat0 INTEGER NOT NULL, lat1 INTEGER NOT NULL, lat2 INTEGER NOT NULL, lat3 INTEGER NOT NULL, lat4 INTEGER NOT NULL,
        lat5 INTEGER NOT NULL, lat6 INTEGER NOT NULL, lat7 INTEGER NOT NULL, lat8 INTEGER NOT NULL, lat9 INTEGER NOT NULL,
        PRIMARY KEY (grano, t, nodo)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 24,
    name: 'the audit trail filtered by action and time (D-91)',
    sql: `
      -- The audit page, GET /admin/auditoria and admin audit filter by action, by client and action,
      -- and by time: each a range of one index, walked by id (keyset pages), so a page costs the same
      -- however long the trail. A time bound is turned into an id once, through the index on fecha.
      CREATE INDEX auditoria_accion ON auditoria(accion, id);
      CREATE INDEX auditoria_cliente_accion ON auditoria(cliente_id, accion, id);
      CREATE INDEX auditoria_fecha ON auditoria(fecha);
      -- Made again after (cliente_id, accion, id): without statistics SQLite prices a page between two ids the
      -- same on both indexes and takes the older one, which reads every action of the client
      -- (test/server/query-plans.test.ts holds it to the right one).
      DROP INDEX auditoria_cliente;
      CREATE INDEX auditoria_cliente ON auditoria(cliente_id, id);
    `,
  },
  {
    version: 25,
    name: 'the ledger by date: per client, per line, refunds and manual changes',
    sql: `
      -- D-104: the ledger listed newest first by date (then id) for a client, a line's balance, or one
      -- movement type, each read in its order from its own index, a date window an index range. A
      -- refund and a manual change are few among a send's charges: each has a partial index of its
      -- predicate (store/movement-sql.ts, the same text), costing a charge's insert nothing. The
      -- client's (cliente_id, fecha, id) replaces (cliente_id, id), which nothing reads any more.
      DROP INDEX movimientos_cliente;
      CREATE INDEX movimientos_cliente_fecha ON movimientos_saldo(cliente_id, fecha, id);
      CREATE INDEX movimientos_celular_fecha ON movimientos_saldo(celular_id, fecha, id) WHERE celular_id IS NOT NULL;
      CREATE INDEX movimientos_reembolsos ON movimientos_saldo(cliente_id, fecha, id) WHERE actor = 'sistema' AND substr(motivo, 1, 10) = 'reembolso ';
      CREATE INDEX movimientos_manuales ON movimientos_saldo(cliente_id, fecha, id) WHERE actor <> 'sistema';
    `,
  },
  {
    version: 26,
    name: 'a retry names the message it retries; failed deliveries by client (D-95)',
    sql: `
      -- mensaje reintentar: the new send keeps the failed message it retries (null on every older row).
      ALTER TABLE mensajes ADD COLUMN reintento_de TEXT;
      -- webhook redeliver --failed: a client's failed deliveries in log order, a batch at a time,
      -- without reading the rest of its log.
      CREATE INDEX eventos_fallidas ON eventos(cliente_id, seq) WHERE entrega = 'fallido';
    `,
  },
  {
    version: 27,
    name: "charts: each client's sends per hour by estado; the charts' triggers in one upsert per table",
    sql: `
      -- D-106: a week's chart for everyone (or a client) reads hours, not quarter hours: each client's
      -- messages per UTC hour and current estado, keyed by the hour first, so everyone's week is one
      -- key range of at most 168 x clients x 5 rows (a quarter's were four times as many, through an
      -- index and a sort). Filled from the quarters it sums; kept eight days, as the quarters.
      CREATE TABLE conteos_horas (
        hora INTEGER NOT NULL,
        cliente_id INTEGER NOT NULL,
        estado TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (hora, cliente_id, estado)
      ) WITHOUT ROWID;
      INSERT INTO conteos_horas (hora, cliente_id, estado, n)
        SELECT cuarto / 4, cliente_id, estado, SUM(n) FROM conteos_cuartos
        WHERE cuarto >= ((SELECT COALESCE(MAX(created_at), 0) FROM mensajes) - 691200000) / 900000 / 4 * 4
        GROUP BY cuarto / 4, cliente_id, estado;
      -- The charts' rows of a message, one upsert per table with the signed changes (-1 on the old
      -- estado's rows, +1 on the new one's): a change of state was three statements on conteos_lineas.
      -- An old row already pruned gets a -1 row, outside every chart, pruned on the next pass.
      DROP TRIGGER conteos_lineas_insert;
      DROP TRIGGER conteos_lineas_estado;
      DROP TRIGGER conteos_lineas_delete;
      CREATE TRIGGER conteos_lineas_insert AFTER INSERT ON mensajes BEGIN
        INSERT INTO conteos_lineas (celular_id, grano, t, estado, n, cliente_id)
          VALUES (NEW.celular_id, 1, NEW.created_at / 60000, NEW.estado, 1, NEW.cliente_id),
                 (NEW.celular_id, 15, NEW.created_at / 900000, NEW.estado, 1, NEW.cliente_id)
          ON CONFLICT (celular_id, grano, t, estado) DO UPDATE SET n = n + 1;
        INSERT INTO conteos_horas (hora, cliente_id, estado, n) VALUES (NEW.created_at / 3600000, NEW.cliente_id, NEW.estado, 1)
          ON CONFLICT (hora, cliente_id, estado) DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER conteos_lineas_estado AFTER UPDATE OF estado ON mensajes WHEN OLD.estado IS NOT NEW.estado BEGIN
        INSERT INTO conteos_lineas (celular_id, grano, t, estado, n, cliente_id)
          VALUES (OLD.celular_id, 1, OLD.created_at / 60000, OLD.estado, -1, OLD.cliente_id),
                 (OLD.celular_id, 15, OLD.created_at / 900000, OLD.estado, -1, OLD.cliente_id),
                 (NEW.celular_id, 1, NEW.created_at / 60000, NEW.estado, 1, NEW.cliente_id),
                 (NEW.celular_id, 15, NEW.created_at / 900000, NEW.estado, 1, NEW.cliente_id)
          ON CONFLICT (celular_id, grano, t, estado) DO UPDATE SET n = n + excluded.n;
        INSERT INTO conteos_horas (hora, cliente_id, estado, n)
          VALUES (OLD.created_at / 3600000, OLD.cliente_id, OLD.estado, -1), (NEW.created_at / 3600000, NEW.cliente_id, NEW.estado, 1)
          ON CONFLICT (hora, cliente_id, estado) DO UPDATE SET n = n + excluded.n;
      END;
      CREATE TRIGGER conteos_lineas_delete AFTER DELETE ON mensajes BEGIN
        INSERT INTO conteos_lineas (celular_id, grano, t, estado, n, cliente_id)
          VALUES (OLD.celular_id, 1, OLD.created_at / 60000, OLD.estado, -1, OLD.cliente_id),
                 (OLD.celular_id, 15, OLD.created_at / 900000, OLD.estado, -1, OLD.cliente_id)
          ON CONFLICT (celular_id, grano, t, estado) DO UPDATE SET n = n + excluded.n;
        INSERT INTO conteos_horas (hora, cliente_id, estado, n) VALUES (OLD.created_at / 3600000, OLD.cliente_id, OLD.estado, -1)
          ON CONFLICT (hora, cliente_id, estado) DO UPDATE SET n = n + excluded.n;
      END;
    `,
  },
  {
    version: 28,
    name: "the engine's sealed authentication state per line (D-116)",
    sql: `
      -- --gateway baileys: each line's credentials and signal keys, sealed with AES-256-GCM under a key
      -- kept outside the database (core/engine/engine-key.ts). The primary key serves a read of many ids of one
      -- kind and the removal of a line's rows (its prefix). A rowid table: pasarela migrate copies by rowid.
      CREATE TABLE motor_auth (
        instancia TEXT NOT NULL,
        kind TEXT NOT NULL,
        id TEXT NOT NULL,
        valor BLOB NOT NULL,
        PRIMARY KEY (instancia, kind, id)
      );
    `,
  },
  {
    version: 29,
    name: "each queued message's next attempt beside its place in the queue (D-143)",
    sql: `
      -- The queue worker's look reads each line's head here and the whole message only when it is due:
      -- a head waiting for a retry costs an index seek, not a read of mensajes. Written with mensajes'
      -- own by the one statement that sets it (retryLater, sqlite/queue.ts); null: none since accepted.
      ALTER TABLE cola ADD COLUMN proximo_intento_at INTEGER;
      UPDATE cola SET proximo_intento_at = (SELECT m.proximo_intento_at FROM mensajes m WHERE m.msg_id = cola.msg_id);
    `,
  },
  {
    version: 30,
    name: "a queued send's validity, and its end beside its place in the queue (D-159)",
    sql: `
      -- vigencia_hasta: the message's own record (its view). cola.vence_at: the same end while it is pending, found by the
      -- worker's expiry sweep through its own index (sqlite/queue.ts expireDue): the sweep's cost follows the messages whose
      -- validity passed, never the backlog. The row goes with the message's place when it leaves pendiente.
      ALTER TABLE mensajes ADD COLUMN vigencia_hasta INTEGER;
      ALTER TABLE cola ADD COLUMN vence_at INTEGER;
      CREATE INDEX cola_vence ON cola(vence_at) WHERE vence_at IS NOT NULL;
      `,
  },
  {
    version: 31,
    name: 'scheduled sends and no head-of-line blocking: the due time, and the queue by recipient and by due time (D-162)',
    sql: `
      -- A send's instant to go (enviar_en, null: as soon as possible); its queue row starts with it as its next attempt.
      ALTER TABLE mensajes ADD COLUMN enviar_en INTEGER;
      -- A line's next message is the oldest due one whose recipient has no older pending one (sqlite/queue.ts queueLook):
      -- the recipient beside the place, its older messages one seek away; the messages never deferred in order
      -- (the line index); the deferred ones (a retry, a scheduled send) by due time, so a future backlog is never read.
      ALTER TABLE cola ADD COLUMN destinatario TEXT NOT NULL DEFAULT '';
      UPDATE cola SET destinatario = (SELECT m.destinatario FROM mensajes m WHERE m.msg_id = cola.msg_id);
      CREATE INDEX cola_destino ON cola(celular_id, destinatario);
      CREATE INDEX cola_diferidos ON cola(celular_id, proximo_intento_at) WHERE proximo_intento_at IS NOT NULL;
      CREATE INDEX cola_listos ON cola(celular_id) WHERE proximo_intento_at IS NULL;
    `,
  },
  {
    version: 32,
    name: "a line's warm-up plan and when it was set (D-166)",
    sql: `
      -- Existing lines keep their caps as they are: no plan (null).
      ALTER TABLE celulares ADD COLUMN calentamiento TEXT;
      ALTER TABLE celulares ADD COLUMN calentamiento_desde INTEGER;
      `,
  },
  {
    version: 33,
    name: "a line's brake: its setting, its state and its health window (D-169)",
    sql: `
      -- freno: the operator's or client's opt-in (0: a crossing only alerts). frenado/frenado_motivo: the queue
      -- waits while 1. salud_desde: the window's start after a resume; salud_alerta_at: the last alert (one an hour).
      ALTER TABLE celulares ADD COLUMN freno INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE celulares ADD COLUMN frenado INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE celulares ADD COLUMN frenado_motivo TEXT;
      ALTER TABLE celulares ADD COLUMN salud_desde INTEGER;
      ALTER TABLE celulares ADD COLUMN salud_alerta_at INTEGER;
      CREATE INDEX celulares_frenados ON celulares(id) WHERE frenado = 1;
      -- A line's failed sends by class, per five minutes of their end (core/accounts/line-brake.ts): one upsert
      -- per failure; the window is a primary-key range, the prune an index range.
      CREATE TABLE salud_fallos (
        celular_id INTEGER NOT NULL,
        t INTEGER NOT NULL,
        clase TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (celular_id, t, clase)
      ) WITHOUT ROWID;
      CREATE INDEX salud_fallos_t ON salud_fallos(t);
      `,
  },
  {
    version: 34,
    name: "a client's pools of lines and each pool's recipient-to-line map (D-173)",
    sql: `
      -- A pool names some of a client's lines (core/accounts/grupos.ts); a send naming it picks one. Its
      -- members and its sticky map go with a deleted line or pool (ON DELETE CASCADE, each served by an index).
      CREATE TABLE grupos (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        cliente_id INTEGER NOT NULL REFERENCES clientes(id) ON DELETE CASCADE,
        nombre TEXT NOT NULL,
        conmutacion_s INTEGER,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        UNIQUE (cliente_id, nombre)
      );
      -- The health pass's pools with a failover wait (failoverPass), without a scan of every pool.
      CREATE INDEX grupos_conmutacion ON grupos (id) WHERE conmutacion_s IS NOT NULL;
      CREATE TABLE grupo_celulares (
        grupo_id INTEGER NOT NULL REFERENCES grupos(id) ON DELETE CASCADE,
        celular_id INTEGER NOT NULL REFERENCES celulares(id) ON DELETE CASCADE,
        PRIMARY KEY (grupo_id, celular_id)
      );
      CREATE INDEX grupo_celulares_celular ON grupo_celulares (celular_id);
      CREATE TABLE grupo_fijos (
        grupo_id INTEGER NOT NULL REFERENCES grupos(id) ON DELETE CASCADE,
        destinatario TEXT NOT NULL,
        celular_id INTEGER NOT NULL REFERENCES celulares(id) ON DELETE CASCADE,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (grupo_id, destinatario)
      );
      CREATE INDEX grupo_fijos_celular ON grupo_fijos (celular_id);
      -- Since when a line of a pool with a failover wait has been seen unable to send (the health pass, D-175).
      CREATE TABLE lineas_caidas (
        celular_id INTEGER PRIMARY KEY REFERENCES celulares(id) ON DELETE CASCADE,
        desde INTEGER NOT NULL
      );
      -- A queued message moved to another line of its pool (failover, D-175) moves its counts with it.
      CREATE TRIGGER conteos_linea_movida AFTER UPDATE OF celular_id ON mensajes WHEN OLD.celular_id IS NOT NEW.celular_id BEGIN
        UPDATE conteos_mensajes SET n = n - 1 WHERE cliente_id = OLD.cliente_id AND celular_id = OLD.celular_id AND estado = OLD.estado;
        INSERT INTO conteos_mensajes (cliente_id, celular_id, estado, n) VALUES (NEW.cliente_id, NEW.celular_id, NEW.estado, 1)
          ON CONFLICT (cliente_id, celular_id, estado) DO UPDATE SET n = n + 1;
        INSERT INTO conteos_lineas (celular_id, grano, t, estado, n, cliente_id)
          VALUES (OLD.celular_id, 1, OLD.created_at / 60000, OLD.estado, -1, OLD.cliente_id),
                 (OLD.celular_id, 15, OLD.created_at / 900000, OLD.estado, -1, OLD.cliente_id),
                 (NEW.celular_id, 1, NEW.created_at / 60000, NEW.estado, 1, NEW.cliente_id),
                 (NEW.celular_id, 15, NEW.created_at / 900000, NEW.estado, 1, NEW.cliente_id)
          ON CONFLICT (celular_id, grano, t, estado) DO UPDATE SET n = n + excluded.n;
      END;
      `,
  },
  {
    version: 35,
    name: 'the lines with a queue, kept by triggers on the queue (D-180)',
    sql: `
      -- One row per line with queued messages and how many: the look walks these rows instead of a skip-scan
      -- over the queue's line index, whose every step is a seek as deep as the backlog (D-180).
      CREATE TABLE cola_lineas (celular_id INTEGER PRIMARY KEY, n INTEGER NOT NULL CHECK (n > 0));
      INSERT INTO cola_lineas (celular_id, n) SELECT celular_id, COUNT(*) FROM cola GROUP BY celular_id;
      CREATE TRIGGER cola_lineas_entra AFTER INSERT ON cola BEGIN
        INSERT INTO cola_lineas (celular_id, n) VALUES (NEW.celular_id, 1) ON CONFLICT (celular_id) DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER cola_lineas_sale AFTER DELETE ON cola BEGIN
        DELETE FROM cola_lineas WHERE celular_id = OLD.celular_id AND n = 1;
        UPDATE cola_lineas SET n = n - 1 WHERE celular_id = OLD.celular_id;
      END;
      -- A pool's failover moves a queued message to another line.
      CREATE TRIGGER cola_lineas_movida AFTER UPDATE OF celular_id ON cola WHEN OLD.celular_id IS NOT NEW.celular_id BEGIN
        DELETE FROM cola_lineas WHERE celular_id = OLD.celular_id AND n = 1;
        UPDATE cola_lineas SET n = n - 1 WHERE celular_id = OLD.celular_id;
        INSERT INTO cola_lineas (celular_id, n) VALUES (NEW.celular_id, 1) ON CONFLICT (celular_id) DO UPDATE SET n = n + 1;
      END;
      `,
  },
  {
    version: 36,
    name: "a queued message's due time beside its place: a scheduled one holds back no newer one to its recipient (D-181)",
    sql: `
      -- enviar_en: a scheduled message's due time (null: none). Until then it is not its recipient's older message.
      ALTER TABLE cola ADD COLUMN enviar_en INTEGER;
      UPDATE cola SET enviar_en = (SELECT m.enviar_en FROM mensajes m WHERE m.msg_id = cola.msg_id);
      -- The recipient's older messages read with their due time from the index alone.
      DROP INDEX cola_destino;
      CREATE INDEX cola_destino ON cola(celular_id, destinatario, enviar_en);
      `,
  },
  {
    version: 37,
    name: "a pool's sticky line is the recipient's latest message's: no map of its own (D-184)",
    sql: `
      -- Read from the history's recipient index instead: a map row per new recipient cost 10% of a pool send.
      DROP TABLE grupo_fijos;
      `,
  },
  {
    version: 38,
    name: "the queue's line and recipient indexes split by whether a message was scheduled (D-186)",
    sql: `
      -- A scheduled backlog spread every line's part of these two indexes, so each ready send's record dirtied a page
      -- of each (1M scheduled: figure 20 at 0.8). Whether a message was scheduled never changes after its accept.
      DROP INDEX cola_linea;
      CREATE INDEX cola_linea ON cola(celular_id) WHERE enviar_en IS NULL;
      CREATE INDEX cola_linea_programados ON cola(celular_id) WHERE enviar_en IS NOT NULL;
      DROP INDEX cola_destino;
      CREATE INDEX cola_destino ON cola(celular_id, destinatario) WHERE enviar_en IS NULL;
      CREATE INDEX cola_destino_programados ON cola(celular_id, destinatario, enviar_en) WHERE enviar_en IS NOT NULL;
      `,
  },
  {
    version: 39,
    name: "each line's earliest deferred time beside its queue count; a claimed scheduled message joins the ready half (D-187)",
    sql: `
      -- proximo: the earliest next attempt of the line's deferred messages (a retry, a scheduled send), so a look
      -- reads the scheduled half of the queue only for a line with something due (queueLook).
      ALTER TABLE cola_lineas ADD COLUMN proximo INTEGER;
      UPDATE cola_lineas SET proximo = (SELECT MIN(proximo_intento_at) FROM cola
        WHERE cola.celular_id = cola_lineas.celular_id AND proximo_intento_at IS NOT NULL);
      -- A scheduled message claimed once is due for good: in the ready half, so the scheduled half holds only messages
      -- never claimed, whose next attempt is their due time.
      UPDATE cola SET enviar_en = NULL WHERE enviar_en IS NOT NULL
        AND msg_id IN (SELECT msg_id FROM mensajes WHERE msg_id = cola.msg_id AND intentos > 0);
      DROP TRIGGER cola_lineas_entra;
      CREATE TRIGGER cola_lineas_entra AFTER INSERT ON cola BEGIN
        INSERT INTO cola_lineas (celular_id, n, proximo) VALUES (NEW.celular_id, 1, NEW.proximo_intento_at)
          ON CONFLICT (celular_id) DO UPDATE SET n = n + 1,
            proximo = CASE WHEN proximo IS NULL OR excluded.proximo < proximo THEN COALESCE(excluded.proximo, proximo) ELSE proximo END;
      END;
      DROP TRIGGER cola_lineas_sale;
      CREATE TRIGGER cola_lineas_sale AFTER DELETE ON cola BEGIN
        DELETE FROM cola_lineas WHERE celular_id = OLD.celular_id AND n = 1;
        UPDATE cola_lineas SET n = n - 1 WHERE celular_id = OLD.celular_id;
        UPDATE cola_lineas SET proximo = (SELECT MIN(proximo_intento_at) FROM cola INDEXED BY cola_diferidos WHERE celular_id = OLD.celular_id AND proximo_intento_at IS NOT NULL) WHERE celular_id = OLD.celular_id AND proximo = OLD.proximo_intento_at;
      END;
      CREATE TRIGGER cola_lineas_proximo AFTER UPDATE OF proximo_intento_at ON cola BEGIN
        UPDATE cola_lineas SET proximo = (SELECT MIN(proximo_intento_at) FROM cola INDEXED BY cola_diferidos WHERE celular_id = NEW.celular_id AND proximo_intento_at IS NOT NULL) WHERE celular_id = NEW.celular_id
          AND (proximo IS NULL OR proximo = OLD.proximo_intento_at OR NEW.proximo_intento_at < proximo);
      END;
      DROP TRIGGER cola_lineas_movida;
      CREATE TRIGGER cola_lineas_movida AFTER UPDATE OF celular_id ON cola WHEN OLD.celular_id IS NOT NEW.celular_id BEGIN
        DELETE FROM cola_lineas WHERE celular_id = OLD.celular_id AND n = 1;
        UPDATE cola_lineas SET n = n - 1 WHERE celular_id = OLD.celular_id;
        INSERT INTO cola_lineas (celular_id, n) VALUES (NEW.celular_id, 1) ON CONFLICT (celular_id) DO UPDATE SET n = n + 1;
        UPDATE cola_lineas SET proximo = (SELECT MIN(proximo_intento_at) FROM cola INDEXED BY cola_diferidos WHERE celular_id = OLD.celular_id AND proximo_intento_at IS NOT NULL) WHERE celular_id = OLD.celular_id;
        UPDATE cola_lineas SET proximo = (SELECT MIN(proximo_intento_at) FROM cola INDEXED BY cola_diferidos WHERE celular_id = NEW.celular_id AND proximo_intento_at IS NOT NULL) WHERE celular_id = NEW.celular_id;
      END;
      `,
  },
];
