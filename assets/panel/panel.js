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
