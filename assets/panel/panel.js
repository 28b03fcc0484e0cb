// pasarela panel: the little behaviour plain HTML lacks. Loaded as a file (the
// Content-Security-Policy allows no inline script); everything works without it.
'use strict';
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy'));
  if (!source) return;
  const text = source.textContent.trim();
  const done = () => {
    button.textContent = 'Copied';
    setTimeout(() => (button.textContent = 'Copy'), 2000);
  };
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, () => selectText(source));
  else selectText(source);
});

// Without a secure context (plain http on another host) the clipboard API is absent: select the text for Ctrl+C.
function selectText(el) {
  const range = document.createRange();
  range.selectNodeContents(el);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
}

// A form that asks for a typed confirmation (delete a line): its button waits for the exact text.
document.addEventListener('input', (event) => {
  const input = event.target;
  if (!(input instanceof HTMLInputElement) || !input.dataset.confirm) return;
  const button = input.form && input.form.querySelector('button[type="submit"]');
  if (button) button.disabled = input.value !== input.dataset.confirm;
});

// A form being sent: its button is disabled until the answer comes (a second click would send it again; the server
// acts once anyway, D-90). Disabled after the submit, so the button's own name and value still go with the form.
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || event.defaultPrevented) return;
  const buttons = form.querySelectorAll('button[type="submit"], button:not([type])');
  setTimeout(() => {
    for (const b of buttons) {
      b.disabled = true;
      b.setAttribute('aria-busy', 'true');
    }
  }, 0);
});

// Back to a page from the browser's cache (the back button): its buttons work again (a typed confirmation's wait for
// its text is kept).
window.addEventListener('pageshow', (event) => {
  if (!event.persisted) return;
  for (const b of document.querySelectorAll('button[aria-busy="true"]')) {
    b.removeAttribute('aria-busy');
    const confirm = b.form && b.form.querySelector('[data-confirm]');
    b.disabled = Boolean(confirm && confirm.value !== confirm.dataset.confirm);
  }
});

// A polled part that answers that its object is gone (a deleted line): the page says so and its forms are disabled.
document.addEventListener('htmx:afterSettle', () => {
  const gone = document.querySelector('[data-gone]');
  const main = document.getElementById('main');
  if (!gone || !main || main.querySelector('.gone-banner')) return;
  const banner = document.createElement('p');
  banner.className = 'error gone-banner';
  banner.setAttribute('role', 'alert');
  banner.textContent = gone.getAttribute('data-gone');
  main.insertBefore(banner, main.querySelector('h1') ? main.querySelector('h1').nextSibling : main.firstChild);
  for (const form of main.querySelectorAll('form')) for (const el of form.elements) el.disabled = true;
});
