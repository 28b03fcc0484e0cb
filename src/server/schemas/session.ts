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
