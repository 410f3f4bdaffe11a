import { html, page, type Html } from '../html.js';

export function loginPage(failed: boolean): Html {
  return page(
    'login',
    html`<h1>Trajectory viewer</h1>${failed ? html`<p class="error">Wrong token.</p>` : ''}
<form method="post" action="/viewer/login"><label>API token (api.token) <input type="password" name="token" autocomplete="current-password" required></label> <button type="submit">Log in</button></form>`,
  );
}

/** An error page: the status, what went wrong, and the way back. */
export function errorPage(status: number, message: string): Html {
  return page(`${status}`, html`<h1>${status}</h1><p class="error">${message}</p><p><a href="/viewer/login">log in</a> · <a href="/viewer">batches</a></p>`);
}
