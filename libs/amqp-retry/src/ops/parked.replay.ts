import type { EditReplayOptions, ParkedSelection, ReplayResult } from '../core/parking/parked-messages.types.js';
import { replayPublishOptions } from '../core/parking/parked.view.js';
import { errorMessage } from '../core/text/error-message.format.js';
import { ConfirmWindow } from './confirm.window.js';
import { publishToQueue, refreshIfWorn, type BrowsedMessage } from './parked-queue.browser.js';
import { missingTarget, replayProblem, ReplayStoppedError, selected, tooLongForAQueue, UNKNOWN_TARGET, unsendable } from './parked-selection.js';
import { settle, type WalkWork } from './parked.connection.js';

/**
 * The walk of a replay of the parking queue `selection` names: each selected message (at most `limit`) is published
 * through the default exchange to its original queue, and acked once that copy is confirmed. `result` tells what it did,
 * also when it stops part-way.
 */
export function replayWalk(selection: ParkedSelection, limit: number, result: ReplayResult): WalkWork<void> {
  const replayed = new Set<string>();
  return async (messages, walk) => {
    const window = new ConfirmWindow(walk.channel);
    // Copies of one id (a refresh cut short): each goes once its twin's replay is confirmed, which may come later.
    const twins: BrowsedMessage[] = [];
    const refreshes: Promise<void>[] = [];
    // Stopped part-way (its channel closed, the broker refused a publish): what was done is said, not lost.
    const stopped = async (error: unknown): Promise<never> => {
      await window.drain();
      if (result.matched === 0 || result.dryRun) throw error;
      const reason = walk.closedBy === undefined ? '' : `; the broker closed the channel: ${walk.closedBy.message}`;
      throw new ReplayStoppedError(selection.errorQueue, result, `${errorMessage(error)}${reason}`);
    };
    try {
      for await (const browsed of messages) {
        const { view } = browsed;
        if (browsed.duplicate && !result.dryRun) {
          browsed.settled = true; // held until the confirms are in: acked then, or given back with the channel
          twins.push(browsed);
        }
        if (browsed.duplicate || !selected(view, selection) || result.matched === limit) continue;
        result.matched++;
        if (result.dryRun) continue;
        if (!view.queue) {
          result.failed.push({ id: view.id, error: view.unreplayable ?? UNKNOWN_TARGET });
          continue;
        }
        browsed.settled = true; // held while its copy awaits the confirm: the walk must not refresh it meanwhile
        const options = replayPublishOptions(browsed.message.properties, { queue: view.queue, now: new Date() });
        await window.publish(view.queue, browsed.message.content, options, (outcome, error) => {
          if (outcome === 'routed') {
            walk.ack(browsed.message);
            replayed.add(view.id);
            result.replayed++;
            return;
          }
          result.failed.push({ id: view.id, error: replayProblem(outcome, view.queue, error) });
          // Left parked, and handed out once more: refreshed when worn, or failed replays would take it to the delivery limit.
          browsed.settled = false;
          refreshes.push(refreshIfWorn(walk.channel, selection.errorQueue, browsed, view.id).catch(() => undefined));
        });
      }
    } catch (error) {
      await stopped(error);
    }
    await window.drain();
    await Promise.all(refreshes);
    for (const twin of twins) if (replayed.has(twin.view.id)) walk.ack(twin.message);
  };
}

/** The walk of a replay of message `id` with the body `content` (and `contentType`, if given). */
export function editReplayWalk(id: string, content: Buffer, contentType: EditReplayOptions['contentType'], result: ReplayResult): WalkWork<void> {
  return async (messages, walk) => {
    for await (const browsed of messages) {
      if (browsed.view.id !== id) continue;
      // A later copy of the id (a refresh cut short) goes once the replay is confirmed, as replay() acks its twins.
      if (browsed.duplicate) {
        if (result.replayed > 0) settle(walk, browsed);
        continue;
      }
      result.matched++;
      if (result.dryRun) return;
      // Published through the default exchange to that queue alone, confirmed; the parked message is acked after.
      const { queue } = browsed.view;
      if (!queue) {
        result.failed.push({ id, error: browsed.view.unreplayable ?? UNKNOWN_TARGET });
        return;
      }
      if (tooLongForAQueue(queue)) {
        result.failed.push({ id, error: unsendable(queue) });
        return;
      }
      const publish = replayPublishOptions(browsed.message.properties, { queue, now: new Date(), contentType });
      if ((await publishToQueue(walk.channel, queue, content, publish)) === 'returned') {
        result.failed.push({ id, error: missingTarget(queue) });
        return;
      }
      settle(walk, browsed);
      result.replayed++;
    }
  };
}
