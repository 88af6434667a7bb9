/** Consumption: each handler queue's state, read and shown, and its Pause or Resume across every instance that consumes it. */
import type { FlowState } from './api.types.js';
import { api } from './api.client.js';
import { byId } from './dom.helpers.js';
import { renderFlow } from './flow.view.js';
import type { Page } from './page.state.js';
import { status } from './status.view.js';

const BY_KEY = 'retry-dashboard-by';

/** Each handler queue's state with its Pause or Resume button; `quiet` (auto-refresh) says nothing of a failure. */
export async function loadFlow(page: Page, quiet = false): Promise<void> {
  try {
    renderFlow(byId('flow'), await api<FlowState[]>('queue-states'), (kind, queue) => void changeFlow(page, kind, queue));
  } catch (error) {
    if (!quiet) status(`Could not read the queue states: ${(error as Error).message}`, 'error');
  }
}

/**
 * Pauses or resumes a queue in every instance that consumes it, asking once per tab who acts (a guard's signed-in user
 * wins on the server) and, for a pause, why: both are shown with the state here, in the log line and to the CLI.
 */
async function changeFlow(page: Page, kind: 'pause' | 'resume', queue: string): Promise<void> {
  const by = sessionStorage.getItem(BY_KEY) || window.prompt(`Your name (shown with the ${kind})`) || '';
  if (!by.trim()) return status('Cancelled.');
  sessionStorage.setItem(BY_KEY, by);
  const reason = kind === 'pause' ? window.prompt(`Why pause ${queue}? Its messages wait in the broker until it is resumed.`) : '';
  if (reason === null) return status('Cancelled.');
  try {
    const changed = await api<FlowState>(`queue-states/${kind}`, { queue, by, reason: reason || undefined });
    status(`${queue} is ${changed.state}.`, 'ok');
    await Promise.all([loadFlow(page), page.load(true)]); // the State column says it too
  } catch (error) {
    status(`Could not ${kind} ${queue}: ${(error as Error).message}`, 'error');
  }
}
