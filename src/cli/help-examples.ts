import type { Command } from 'commander';
import { visibleSubcommands } from './completion.js';

/**
 * The Examples section of every command's --help, by command path, in one
 * table so that all of them read alike; buildProgram adds them after every
 * command is registered. A test fails for a visible leaf command without
 * one. Each line runs as written against a server set up as in the README.
 */
export const EXAMPLES: Record<string, string[]> = {
  serve: [
    'pasarela serve',
    'pasarela serve --host 0.0.0.0 --port 8080 --data-dir /var/lib/pasarela',
    'PASARELA_GATEWAY_KEY="$EVO_KEY" pasarela serve --gateway evolution --gateway-url http://evolution:8080 --store postgres://pasarela@db:5432/pasarela',
  ],
  migrate: [
    'pasarela migrate --from sqlite:/var/lib/pasarela --to postgres://pasarela@db:5432/pasarela',
    'pasarela migrate --from sqlite:/var/lib/pasarela --to postgres://pasarela@db:5432/pasarela --replace --json',
  ],
  login: [
    'pasarela login',
    'printf %s "$KEY" | pasarela login --url https://pasarela.example.com --key-stdin',
    'printf %s "$KEY" | pasarela login --profile staging --url http://10.0.0.5:8080 --key-stdin',
  ],
  logout: ['pasarela logout', 'pasarela logout --profile staging'],
  'config list': ['pasarela config list', 'pasarela config list --json'],
  'config get': ['pasarela config get url', 'pasarela config get key --profile staging'],
  'config set': [
    'pasarela config set url https://pasarela.example.com',
    'printf %s "$TOKEN" | pasarela config set admin_token --key-stdin',
    'pasarela config set data_dir /var/lib/pasarela --profile local',
  ],
  'config unset': ['pasarela config unset admin_token', 'pasarela config unset data_dir --profile local'],
  'config use': ['pasarela config use staging'],
  'config remove': ['pasarela config remove staging', 'pasarela config rm old --yes'],
  'config path': ['pasarela config path'],
  info: ['pasarela info', 'pasarela info --json'],
  saldo: ['pasarela saldo', 'pasarela saldo --celular 12 --json'],
  'saldo movimientos': [
    'pasarela saldo movimientos',
    'pasarela saldo movimientos --tipo manual --desde 2026-11-01',
    'pasarela saldo movimientos --celular 12 --all --format csv > movimientos.csv',
  ],
  'saldo consumo': ['pasarela saldo consumo', 'pasarela saldo consumo --mes 2026-10 --json'],
  'grupo list': ['pasarela grupo list', "pasarela grupo list --json | jq '.grupos[].nombre'"],
  'grupo crear': ['pasarela grupo crear otp --celulares 12,13', 'pasarela grupo crear campana --celulares 12,13,14 --conmutacion 5m --json'],
  'grupo editar': ['pasarela grupo editar otp --celulares 12,13,15', 'pasarela grupo editar otp --nombre codigos --conmutacion none'],
  'grupo eliminar': ['pasarela grupo eliminar otp', 'pasarela grupo eliminar otp --yes --json    # no question; required without a TTY'],
  'celular list': ['pasarela celular list', "pasarela celular list --json | jq '.celulares[].id'"],
  'celular show': ['pasarela celular show 12', 'pasarela celular show 12 --json'],
  'celular create': ['pasarela celular create 5215512345678 --nombre Ventas', 'pasarela celular create 5215512345678 --json'],
  'celular edit': [
    'pasarela celular edit 12 --nombre Soporte',
    'pasarela celular edit 12 --por-minuto 10 --por-hora 300 --por-dia none',
    'pasarela celular edit 12 --desde 09:00 --hasta 18:00',
  ],
  'celular delete': ['pasarela celular delete 12', 'pasarela celular delete 12 --yes'],
  'celular status': ['pasarela celular status 12', 'pasarela celular status 12 --json'],
  'celular logout': ['pasarela celular logout 12', 'pasarela celular logout 12 --yes --json    # no question; required without a TTY'],
  'celular restart': ['pasarela celular restart 12', 'pasarela celular restart 12 --json'],
  'celular resume': ['pasarela celular resume 12', 'pasarela celular resume 12 --json'],
  'celular qr': [
    'pasarela celular qr 12',
    'pasarela celular qr 12 --wait --json --timeout 300    # NDJSON, one line per QR; exit 11 if not linked in time',
    'pasarela celular qr 12 --png qr.png                   # the QR showing now as a PNG image, then exit',
  ],
  'celular link': ['pasarela celular link 5215512345678 --nombre Ventas', 'pasarela celular link 5215512345678 --pairing-code --wait --timeout 300'],
  'send text': [
    "pasarela send text 5215512345678 'Your order has shipped'",
    "echo 'Your order has shipped' | pasarela send text 5215512345678 -",
    "pasarela send text 5215512345678 'Code 4821' --directo --celular 12 --retry 3",
  ],
  'send bulk': [
    "pasarela send bulk clientes.csv --text 'Hola {nombre}, tu pedido salió' --dry-run",
    "pasarela send bulk clientes.csv --text 'Hola {nombre}' > resultado.ndjson    # one JSON line per row; exit 12 if some were refused",
    'pasarela send bulk promo.csv --text-column mensaje --media-column foto --concurrency 8',
  ],
  'send image': ['pasarela send image 5215512345678 ./photo.jpg --caption Invoice', 'pasarela send image 5215512345678 https://example.com/photo.jpg'],
  'send document': [
    'pasarela send document 5215512345678 ./invoice.pdf --filename factura.pdf',
    'pasarela send document 5215512345678 https://example.com/invoice.pdf',
  ],
  'send audio': ['pasarela send audio 5215512345678 ./note.ogg --ptt'],
  'send video': ['pasarela send video 5215512345678 ./clip.mp4 --caption Demo'],
  'send sticker': ['pasarela send sticker 5215512345678 ./sticker.webp'],
  'admin client create': [
    'pasarela admin client create --nombre "Tienda Sol" --email ops@sol.example --saldo 100',
    'pasarela admin client create --nombre Acme --email it@acme.example --plan ilimitado --max-celulares 5 --json',
  ],
  'admin client list': ['pasarela admin client list', 'pasarela admin client list --json --admin-token "$TOKEN"'],
  'admin client show': ['pasarela admin client show 3'],
  'admin client edit': ['pasarela admin client edit 3 --plan ilimitado', 'pasarela admin client edit 3 --estado suspendido'],
  'admin client rotate-key': ['pasarela admin client rotate-key 3', 'pasarela admin client rotate-key 3 --yes --json'],
  'admin balance movements': ['pasarela admin balance movements --cliente 3', 'pasarela admin balance movements --cliente 3 --tipo manual --all --format csv'],
  'admin balance add': [
    'pasarela admin balance add --cliente 3 --monto 500 --motivo "bank transfer"',
    'pasarela admin balance add --cliente 3 --celular 12 --monto -20',
  ],
  'admin celular legacy-token': ['pasarela admin celular legacy-token 12', 'pasarela admin celular legacy-token 12 "$OLD_TOKEN"'],
  'admin celular rotate-key': ['pasarela admin celular rotate-key 12', 'pasarela admin celular rotate-key 12 --yes --json'],
  'admin celular move': ['pasarela admin celular move 12 evo-2'],
  'admin celular resume': ['pasarela admin celular resume 12'],
  'admin gateway list': ['pasarela admin gateway list'],
  'admin gateway add': ['printf %s "$EVO_KEY" | pasarela admin gateway add evo-2 --gateway-url http://evo-2:8080 --gateway-key - --max-lineas 200'],
  'admin gateway drain': ['pasarela admin gateway drain evo-1'],
  'admin gateway undrain': ['pasarela admin gateway undrain evo-1'],
  'admin stats': ['pasarela admin stats', 'pasarela admin stats --rango 24h --cliente 3', 'pasarela admin stats --rango 7d --celular 12 --json'],
  'admin audit': [
    'pasarela admin audit',
    'pasarela admin audit --cliente 3 --accion saldo.cambiar --desde 2026-11-01 --all',
    'pasarela admin audit --accion webhook.configurar --limit 10 --json',
  ],
  'admin backup': ['pasarela admin backup pasarela-$(date +%F).db', 'pasarela admin backup /backups/pasarela.db --force --json'],
  'sim scan': ['pasarela sim scan 12', 'pasarela sim scan 12 --code ABCD-1234'],
  'sim logout': ['pasarela sim logout 12'],
  'sim receive': ["pasarela sim receive 12 --from 5215599998888 --text 'Hola'"],
  'sim fail': ["pasarela sim fail 5215599998888 --motivo 'number not on WhatsApp'", 'pasarela sim fail 5215599998888 --clear', 'pasarela sim fail'],
  mensaje: ['pasarela mensaje 0193a1c2-7f3e-7b10-9c4d-2e8f5a6b7c8d', 'pasarela mensaje "$MSG_ID" --json | jq -r .mensaje.estado'],
  cola: ['pasarela cola --celular 12', "pasarela cola --json | jq -r '.mensajes[] | [.msg_id, .motivo] | @tsv'"],
  'cola cancel': ['pasarela cola cancel 0193a1c2-7f3e-7b10-9c4d-2e8f5a6b7c8d', 'pasarela cola cancel --celular 12 --all --yes'],
  retry: ['pasarela retry 0193a1c2-7f3e-7b10-9c4d-2e8f5a6b7c8d', 'pasarela historial --estado error --format ndjson | jq -r .msg_id | xargs pasarela retry'],
  eventos: [
    'pasarela eventos --follow',
    'pasarela eventos --follow --eventos message.status --json | jq -r .data.estado',
    'pasarela eventos --desde-id "$(tail -n1 eventos.ndjson | cut -d\'"\' -f4)" >> eventos.ndjson',
  ],
  historial: [
    'pasarela historial --celular 12 --estado error',
    'pasarela historial --desde 2025-01-01 --hasta 2025-01-31 --all --format csv > enero.csv',
    'pasarela historial --all --format ndjson | jq -r .msg_id',
  ],
  recibidos: [
    'pasarela recibidos --celular 12',
    'pasarela recibidos --remitente 5215512345678 --desde 2025-01-01 --format csv > cliente.csv',
    'pasarela recibidos --all --format ndjson | jq -r .texto',
  ],
  'webhook get': ['pasarela webhook get', 'pasarela webhook get --json'],
  'webhook set': [
    'pasarela webhook set https://example.com/hooks/pasarela --generate-secret',
    'pasarela webhook set https://example.com/hooks --eventos messages.received,message.status',
  ],
  'webhook delete': ['pasarela webhook delete', 'pasarela webhook delete --yes'],
  'webhook restore': ['pasarela webhook restore'],
  'webhook test': ['pasarela webhook test'],
  'webhook deliveries': ['pasarela webhook deliveries', 'pasarela webhook deliveries --limit 100 --json'],
  'webhook redeliver': ['pasarela webhook redeliver evt_4f1c2b9a8e7d4c3b9a1f0e2d3c4b5a69', 'pasarela webhook redeliver --failed --evento message.status'],
  'webhook listen': ['pasarela webhook listen', 'pasarela webhook listen --forward-to http://127.0.0.1:3000/hooks --eventos messages.received'],
  completion: [
    'pasarela completion bash > /etc/bash_completion.d/pasarela',
    'pasarela completion zsh > "${fpath[1]}/_pasarela"',
    'pasarela completion fish > ~/.config/fish/completions/pasarela.fish',
  ],
};

export const EXIT_CODES_REFERENCE = 'Exit codes: the table in `pasarela --help` (0 ok, 2 usage, 3 auth, 8 cannot reach the server, ...).';

/** Adds the Examples section (and the exit-code reference) to every visible command that has examples. */
export function addExamples(cmd: Command, path: string[] = []): void {
  for (const c of visibleSubcommands(cmd)) {
    const p = [...path, c.name()];
    const lines = EXAMPLES[p.join(' ')];
    if (lines) c.addHelpText('after', `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n\n${EXIT_CODES_REFERENCE}\n`);
    addExamples(c, p);
  }
}
