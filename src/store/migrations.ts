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

      -- Sent-message history (DESIGN §8). Filled by the send path.
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
];
