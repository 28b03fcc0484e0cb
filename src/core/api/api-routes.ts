/**
 * The service's canonical paths, named once: the server registers its routes
 * at them and the CLI calls them. Parameters are written `:name`, as Fastify
 * reads them; `pathTo` fills them in for a client.
 */
export const API = {
  health: '/health',
  ready: '/ready',
  metrics: '/metrics',

  info: '/api/info.php',
  saldo: '/api/saldo.php',
  celulares: '/api/celulares.php',
  celular: '/api/celular.php',
  celularCrear: '/api/celular_crear.php',
  celularEditar: '/api/celular_editar.php',
  celularEliminar: '/api/celular_eliminar.php',
  celularQr: '/api/celular_qr.php',
  celularCodigo: '/api/celular_codigo.php',
  celularStatus: '/api/celular_status.php',
  celularLogout: '/api/celular_logout.php',
  celularReiniciar: '/api/celular_reiniciar.php',
  celularReanudar: '/api/celular_reanudar.php',
  celularVincularQr: '/api/celular_vincular_qr.php',
  celularVincularCodigo: '/api/celular_vincular_codigo.php',
  grupos: '/api/grupos.php',
  grupoCrear: '/api/grupo_crear.php',
  grupoEditar: '/api/grupo_editar.php',
  grupoEliminar: '/api/grupo_eliminar.php',
  mensajeTexto: '/api/mensaje_enviar_texto.php',
  mensajeImagen: '/api/mensaje_enviar_imagen.php',
  mensajeImagenBase64: '/api/mensaje_enviar_imagen_base64.php',
  mensajeDocumento: '/api/mensaje_enviar_documento.php',
  mensajeDocumentoBase64: '/api/mensaje_enviar_documento_base64.php',
  mensajeAudio: '/api/mensaje_enviar_audio.php',
  mensajeAudioBase64: '/api/mensaje_enviar_audio_base64.php',
  mensajeVideo: '/api/mensaje_enviar_video.php',
  mensajeVideoBase64: '/api/mensaje_enviar_video_base64.php',
  mensajeSticker: '/api/mensaje_enviar_sticker.php',
  mensajeStickerBase64: '/api/mensaje_enviar_sticker_base64.php',
  historial: '/api/historial_listar.php',
  mensaje: '/api/mensaje.php',
  recibidos: '/api/recibidos_listar.php',
  webhook: '/api/webhook.php',
  webhookConfigurar: '/api/webhook_configurar.php',
  webhookRestaurar: '/api/webhook_restaurar.php',
  webhookTest: '/api/webhook_test.php',
  webhookEntregas: '/api/webhook_entregas.php',
  webhookReenviar: '/api/webhook_reenviar.php',
  webhookEscuchas: '/api/webhook_escuchas.php',
  webhookEscuchasRenovar: '/api/webhook_escuchas_renovar.php',
  webhookEscuchasEliminar: '/api/webhook_escuchas_eliminar.php',
  eventos: '/api/eventos.php',
  movimientos: '/api/movimientos.php',
  consumo: '/api/consumo.php',
  cola: '/api/cola.php',
  colaCancelar: '/api/cola_cancelar.php',
  mensajeReintentar: '/api/mensaje_reintentar.php',
  webhookReenviarFallidas: '/api/webhook_reenviar_fallidas.php',

  adminClientes: '/admin/clientes',
  adminCliente: '/admin/clientes/:id',
  adminClienteRotarKey: '/admin/clientes/:id/rotar-key',
  adminSaldo: '/admin/saldo',
  adminCelularTokenLegacy: '/admin/celulares/:id/token-legacy',
  adminCelularRotarKey: '/admin/celulares/:id/rotar-key',
  adminCelularServidor: '/admin/celulares/:id/servidor',
  adminCelularLogout: '/admin/celulares/:id/logout',
  adminCelularReiniciar: '/admin/celulares/:id/reiniciar',
  adminCelularReanudar: '/admin/celulares/:id/reanudar',
  adminAuditoria: '/admin/auditoria',
  adminMovimientos: '/admin/movimientos',
  adminGateways: '/admin/gateways',
  adminGatewayDrain: '/admin/gateways/:nombre/drain',
  adminGatewayUndrain: '/admin/gateways/:nombre/undrain',
  adminBackup: '/admin/backup',
  adminEstadisticas: '/admin/estadisticas',
  simScan: '/admin/sim/scan',
  simLogout: '/admin/sim/logout',
  simReceive: '/admin/sim/receive',
  simFail: '/admin/sim/fail',
} as const;

export type ApiPath = (typeof API)[keyof typeof API];

/** A path with its `:name` parameters filled in (URL-encoded): `pathTo(API.adminCliente, { id: 3 })`. */
export function pathTo(path: ApiPath, params: Record<string, string | number>): string {
  return path.replace(/:([a-z_]+)/gi, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`pathTo: no value for :${name} in ${path}`);
    return encodeURIComponent(String(value));
  });
}
