import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ERRORS } from '../../core/api/errors.js';
import { logFailure, toAppError } from '../errors.js';
import { redirect } from './context.js';
import { errorText } from './forms.js';
import { html } from './html.js';
import { sendFragment, sendPage } from './layout.js';

/** An error as a page: the API's words and code; a server fault without detail (it is logged). */
export function errorPage(err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply) {
  const e = toAppError(err);
  logFailure(req.log, e, err, 'panel request failed');
  if (e.row === ERRORS.UNAUTHORIZED && req.url !== '/panel/login') return redirect(req, reply, '/panel/login');
  if (e.extras.retryAfter !== undefined) reply.header('Retry-After', String(e.extras.retryAfter));
  // A live part refused for good (a suspended client's QR, a line deleted meanwhile): the refusal takes the part's
  // place, so it shows and the polling ends. htmx swaps only a 2xx; a fault (5xx) keeps polling, it may pass.
  if (req.headers['hx-request'] === 'true' && e.status < 500) return sendFragment(reply, html`<p class="error" role="alert">${errorText(e)}</p>`);
  const title = e.status === 404 ? 'Not found' : e.status === 403 ? 'Not allowed' : e.status >= 500 ? 'Something went wrong' : 'That did not work';
  return sendPage(
    req,
    reply,
    { title },
    html`<p class="error" role="alert">
        ${e.status >= 500 ? 'The server could not answer this page. Try again; if it keeps happening, look at the server log.' : errorText(e)}
      </p>
      <p><a href="/panel/">Back to the panel</a></p>`,
    e.status,
  );
}
