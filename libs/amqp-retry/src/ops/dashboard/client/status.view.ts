/** The status line, which reports the operator's last action, and the dialog that confirms an action first. */
import { byId } from './dom.helpers.js';

/** Says `text` on the status line; `kind` ('ok', 'error' or '') sets its tone. */
export function status(text: string, kind = ''): void {
  const node = byId('status');
  node.textContent = text;
  node.className = kind;
}

/** Asks `text` in the confirm dialog: true once confirmed; cancelled or closed, false. */
export function confirmAction(text: string): Promise<boolean> {
  return new Promise((resolve) => {
    const dialog = byId<HTMLDialogElement>('confirm');
    const ok = byId('confirm-ok');
    const cancel = byId('confirm-cancel');
    byId('confirm-text').textContent = text;
    const done = (answer: boolean) => {
      ok.onclick = null;
      cancel.onclick = null;
      dialog.onclose = null;
      if (dialog.open) dialog.close();
      resolve(answer);
    };
    ok.onclick = () => done(true);
    cancel.onclick = () => done(false);
    dialog.onclose = () => done(false);
    dialog.showModal();
  });
}
