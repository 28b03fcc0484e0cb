/** The linked phone's profile as the line's reads answer it (an addition: clients that do not know it ignore it). */
export const perfilProp = {
  type: 'object',
  nullable: true,
  description: 'The linked phone as the gateway knows it: its WhatsApp name and number; null when the line is not connected or the gateway does not say',
  properties: {
    nombre: { type: 'string', nullable: true, description: "the phone's WhatsApp (push) name" },
    numero: { type: 'string', nullable: true, description: 'the linked number, country code first, digits only' },
  },
} as const;

/** What a logout or a restart answers: the line's session after the action, and the line. */
export const sessionActionProps = {
  celular_id: { type: 'integer' },
  status: { type: 'string', description: 'the session status now: logged_out after a logout; connecting (or need_scan) after a restart' },
  estado: { type: 'string' },
  vinculado: { type: 'boolean', description: 'whether the session holds a link (a logout clears it; a restart keeps it)' },
  ultimo_check: { type: 'string', format: 'date-time', nullable: true },
  celular: { $ref: 'Celular#' },
} as const;

/** Which node holds the line's engine session (D-137; an addition, absent unless the gateway is the in-process engine). */
export const motorNodoProp = {
  type: 'object',
  nullable: true,
  description:
    "Only with the in-process engine (--gateway baileys): the serve node that holds the line's session (its socket); null when nobody holds it " +
    '(never linked, or between two nodes); absent with any other gateway',
  properties: {
    id: { type: 'string', description: "the node's id (new at each start of serve)" },
    etiqueta: { type: 'string', nullable: true, description: 'the node for people: "pasarela serve pid PID on HOST"; null once the node has left' },
    presente: { type: 'boolean', description: 'whether the node beats within its takeover margin (false: it is gone, and another node takes the line)' },
  },
} as const;
