import { Body, Controller, Inject, Logger, NotFoundException, Param, Query, Req, StreamableFile, type Type, UseGuards } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { ParkedMessages } from '../parked-messages.service.js';
import { ReplayStoppedError } from '../parked-selection.js';
import type { PurgeResult, ReplayResult } from '../../core/parking/parked-messages.types.js';
import { DashboardAccessGuard } from './dashboard-access.guard.js';
import type { DashboardConfig } from './dashboard.options.js';
import {
  DashboardRequestError,
  exportFileName,
  readEdit,
  readExportQuery,
  readFilter,
  readOperation,
  readGroupSelection,
  readPage,
  readSelection,
} from './dashboard.request.js';
import { jsonLinesStream } from './export.stream.js';
import { DASHBOARD_CONFIG } from './dashboard.constants.js';
import { Asset, Page, Read, Write } from './dashboard.routes.js';
import { httpErrorOf } from './dashboard.errors.js';
import { DASHBOARD_ICON, ICON_PATH, renderPage, SCRIPT_PATH, STYLE_PATH } from './dashboard.page.js';
import { DASHBOARD_SCRIPT, DASHBOARD_STYLE } from './dashboard.client.generated.js';
import { PageTokens } from './page.token.js';
import { maskCredentials, maskingLogger } from '../../core/text/credentials.mask.js';
import type { RetryLogger } from '../../core/observe/retry.logger.js';
import { RetryEngine } from '../../engine/retry.engine.js';
import { readPauseBy } from '../../core/breaker/queue.state.js';
import { FleetWatch } from './fleet.watch.js';
import { GroupActions, type GroupAction } from './group.actions.js';

/** The path the browser asked for, without query and trailing slashes: the page's base under any global prefix. */
export function requestBase(request: Pick<IncomingMessage, 'url'> & { originalUrl?: string }): string {
  const path = (request.originalUrl ?? request.url ?? '/').split(/[?#]/)[0];
  return path.replace(/\/+$/, '') || '/';
}

/**
 * The dashboard's controller for one mount path. A class per module instance, because a controller's path is set
 * by its decorator: two applications in one process (or two tests) each get their own, with nothing shared.
 */
export function createDashboardController(path: string): Type<unknown> {
  @Controller(path)
  @UseGuards(DashboardAccessGuard)
  class RetryDashboardController {
    /** Every line masked and printable: a group's error text or a broker error may quote a body or a URL. */
    private readonly logger: RetryLogger = maskingLogger(new Logger('RetryDashboard'));
    /** This application's queues, or (option wholeVhost) every application's, on the same connection. */
    private readonly parked: ParkedMessages;

    constructor(
      @Inject(DASHBOARD_CONFIG) private readonly config: DashboardConfig,
      private readonly tokens: PageTokens,
      @Inject(ParkedMessages) parked: ParkedMessages,
      @Inject(RetryEngine) private readonly engine: RetryEngine,
      private readonly watch: FleetWatch,
      private readonly groupActions: GroupActions,
    ) {
      this.parked = config.wholeVhost ? parked.wholeVhost() : parked;
    }

    @Page()
    page(@Req() request: IncomingMessage & { originalUrl?: string }): string {
      return renderPage({ base: requestBase(request), token: this.tokens.issue(), open: this.config.open });
    }

    @Asset(SCRIPT_PATH, 'text/javascript; charset=utf-8')
    script(): string {
      return DASHBOARD_SCRIPT;
    }

    @Asset(ICON_PATH, 'image/svg+xml')
    icon(): string {
      return DASHBOARD_ICON;
    }

    @Asset(STYLE_PATH, 'text/css; charset=utf-8')
    style(): string {
      return DASHBOARD_STYLE;
    }

    @Read('api/queues')
    queues() {
      return this.call('list the queues', () => this.parked.queues());
    }

    /** The outbox's backlog (docs/outbox.md): `{ configured: false }` without an outbox. */
    @Read('api/outbox')
    outbox() {
      return this.call('read the outbox', async () => {
        const backlog = await this.engine.outboxBacklog();
        return backlog ? { configured: true as const, ...backlog } : { configured: false as const };
      });
    }

    /** Partitioned handlers of this application: members, and each partition's owner and depth (docs/partitions.md). */
    @Read('api/partitions')
    partitions() {
      return this.engine.partitions();
    }

    /** The application's instances from their heartbeats (up, or gone since when) and the summary strip. */
    @Read('api/fleet')
    fleet() {
      return this.watch.view();
    }

    /** Per queue, one point a minute over the last `minutes` (default 60, at most the history kept): counts and percentiles. */
    @Read('api/history')
    history(@Query('minutes') minutes?: string) {
      return this.call('read the history', async () => {
        const span = minutes === undefined ? 60 : Number(minutes);
        if (!Number.isInteger(span) || span < 1)
          throw new DashboardRequestError('minutes', `is ${JSON.stringify(minutes)}; give a whole number of minutes, e.g. 60`);
        return this.watch.history(span);
      });
    }

    /** Who replayed or purged which failure group, when, and how many (this instance's record, newest first). */
    @Read('api/groups/actions')
    groupHistory() {
      return this.groupActions.list();
    }

    /**
     * Replays or purges a failure group in one action: `{ errorQueue, group, filter?, by?, expected? }`. `filter` (the
     * page's queue, text and time fields) narrows the group to the messages the page counted; without it, the whole
     * group. A replay publishes each message once and acks it only once the broker confirmed the copy, as every replay;
     * the action is recorded. `expected` (the count the operator confirmed) refuses with 409 when the selection holds
     * another number by then.
     */
    @Write('api/groups/:action')
    group(@Param('action') action: string, @Body() body: unknown, @Req() request: IncomingMessage & { user?: unknown }): Promise<GroupAction> {
      return this.call(`${action} a failure group`, async () => {
        if (action !== 'replay' && action !== 'purge') throw new NotFoundException(`No group action ${JSON.stringify(action)}; use replay or purge.`);
        const selection = readGroupSelection(body);
        const who = readWho(request, fieldsOf(body).by ?? 'unknown');
        await this.knownParkingQueue(selection);
        const [described] = (await this.parked.summary({ ...selection.filter, errorQueue: selection.errorQueue }, { groups: true })).groups ?? [];
        const options = readOperation(body);
        const done = (result: ReplayResult | PurgeResult, stopped?: string): GroupAction => {
          const record: GroupAction = {
            at: new Date().toISOString(),
            by: who.by,
            action,
            group: selection.filter.group,
            errorQueue: selection.errorQueue,
            error: described?.error ?? '',
            matched: result.matched,
            done: 'replayed' in result ? result.replayed : result.purged,
            failed: 'failed' in result ? result.failed.length : 0,
            ...(stopped !== undefined && { stopped }),
          };
          this.groupActions.record(record);
          const line = `${who.by} ${action === 'replay' ? 'replayed' : 'purged'} ${record.done} of ${record.matched} of the group "${record.error}" from ${record.errorQueue}`;
          if (stopped === undefined) this.logger.log(line);
          else this.logger.warn(`${line}, then stopped: ${stopped}`);
          return record;
        };
        if (action === 'purge') return done(await this.parked.purge(selection, options));
        // A replay stopped part-way changed the queue: what it did is recorded and logged before the error is answered.
        const result = await this.parked.replay(selection, options).catch((error: unknown) => {
          if (error instanceof ReplayStoppedError) done(error.partial, maskCredentials(error.message));
          throw error;
        });
        return done(result);
      });
    }

    @Read('api/summary')
    summary(@Query() query: unknown) {
      return this.call('count parked messages', () => this.parked.summary(readFilter(query, 'query'), { groups: true }));
    }

    @Read('api/messages')
    list(@Query() query: unknown) {
      return this.call('list parked messages', () => {
        const { offset, limit, ...filter } = (query ?? {}) as Record<string, unknown>;
        return this.parked.list(readFilter(filter, 'query'), readPage({ offset, limit }));
      });
    }

    @Read('api/messages/:errorQueue/:id')
    show(@Param('errorQueue') errorQueue: string, @Param('id') id: string) {
      return this.call('show a parked message', async () => {
        await this.knownParkingQueue({ errorQueue });
        const view = await this.parked.show(errorQueue, id);
        if (!view) throw new NotFoundException(`No message ${id} is parked in ${errorQueue} (replayed or purged meanwhile?).`);
        return view;
      });
    }

    /**
     * The matching messages of one parking queue as JSON lines, left parked. The first line is read before the answer
     * starts, so that a missing queue or a broker failure is an error status rather than a cut-off download.
     */
    @Read('api/export')
    export(@Query() query: unknown) {
      return this.call('export', async () => {
        const { errorQueue, filter } = await this.knownParkingQueue(readExportQuery(query));
        const lines = this.parked.export({ errorQueue, filter })[Symbol.asyncIterator]();
        const first = await lines.next();
        const body = jsonLinesStream(first, lines, (error) =>
          this.logger.error(`Export of ${errorQueue} cut short: ${error instanceof Error ? error.message : String(error)}`),
        );
        return new StreamableFile(body, {
          type: 'application/x-ndjson; charset=utf-8',
          disposition: `attachment; filename="${exportFileName(errorQueue)}"`,
        });
      });
    }

    // A state change is logged once done: operators ask later what was replayed or purged, and by which call.
    @Write('api/replay')
    replay(@Body() body: unknown) {
      return this.call('replay', async () => {
        const selection = await this.knownParkingQueue(readSelection(body));
        const r = await this.parked.replay(selection, readOperation(body));
        this.logger.log(
          r.dryRun
            ? `Dry run: would replay ${r.matched} from ${selection.errorQueue}`
            : `Replayed ${r.replayed} of ${r.matched} from ${selection.errorQueue} (${r.failed.length} left parked)`,
        );
        return r;
      });
    }

    @Write('api/edit-and-replay')
    editAndReplay(@Body() body: unknown) {
      return this.call('edit and replay', async () => {
        const edit = await this.knownParkingQueue(readEdit(body));
        const r = await this.parked.editAndReplay(edit.errorQueue, edit.id, edit.body, {
          contentType: edit.contentType,
          dryRun: readOperation(body).dryRun,
        });
        this.logger.log(
          r.dryRun
            ? `Dry run: would replay ${edit.id} from ${edit.errorQueue} with an edited body (${r.matched} found)`
            : `Replayed ${edit.id} from ${edit.errorQueue} with an edited body (${r.replayed} replayed)`,
        );
        return r;
      });
    }

    @Write('api/purge')
    purge(@Body() body: unknown) {
      return this.call('purge', async () => {
        const selection = await this.knownParkingQueue(readSelection(body));
        const r = await this.parked.purge(selection, readOperation(body));
        this.logger.log(
          r.dryRun
            ? `Dry run: would purge ${r.matched} from ${selection.errorQueue}`
            : `Purged ${r.purged} of ${r.matched} from ${selection.errorQueue}`,
        );
        return r;
      });
    }

    /** Each handler queue of this application: running, half-open, open (circuit breaker) or paused, by whom, since when. */
    @Read('api/queue-states')
    queueStates() {
      return this.engine.queueStates();
    }

    /** Pauses a handler queue here and in every other instance consuming it (the kill switch). */
    @Write('api/queue-states/pause')
    pauseQueue(@Body() body: unknown, @Req() request: IncomingMessage & { user?: unknown }) {
      return this.call('pause', () => this.changeFlow('pause', body, request));
    }

    @Write('api/queue-states/resume')
    resumeQueue(@Body() body: unknown, @Req() request: IncomingMessage & { user?: unknown }) {
      return this.call('resume', () => this.changeFlow('resume', body, request));
    }

    private async changeFlow(kind: 'pause' | 'resume', body: unknown, request: { user?: unknown }) {
      const { queue, by, reason } = fieldsOf(body);
      if (typeof queue !== 'string' || !this.engine.queueStates().some((q) => q.queue === queue)) {
        throw new DashboardRequestError('queue', `${JSON.stringify(queue)} is not a handler queue of this application`);
      }
      const who = readWho(request, by, kind === 'pause' ? reason : undefined);
      return kind === 'pause' ? this.engine.pauseEverywhere(queue, who) : this.engine.resumeEverywhere(queue, who);
    }

    /**
     * Only the parking queues of the handler queues the page shows may be read or changed from it: a hand-made call
     * naming a business queue, or another application's parking queue, as `errorQueue` must not purge or replay its
     * messages. ParkedMessages checks its scope too; this also refuses a parking queue no handler queue records.
     */
    private async knownParkingQueue<I extends { errorQueue: string }>(input: I): Promise<I> {
      const queues = await this.parked.queues();
      if (!queues.some((q) => q.errorQueue === input.errorQueue)) {
        throw new DashboardRequestError('errorQueue', `${JSON.stringify(input.errorQueue)} is not the parking queue of a known handler queue`);
      }
      return input;
    }

    /** Runs a call; a failure becomes its HTTP answer (see httpErrorOf). */
    private async call<T>(what: string, work: () => Promise<T>): Promise<T> {
      try {
        return await work();
      } catch (error) {
        throw httpErrorOf(error, what, this.config.wholeVhost, this.logger);
      }
    }
  }
  return RetryDashboardController;
}

/** The fields of a JSON body; none when it is not an object. */
const fieldsOf = (value: unknown): Record<string, unknown> => (typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {});

/**
 * Who acts (and, for a pause, why): the name the guard put on the request (passport: request.user), else the one sent
 * with the call. A problem names its field: `by` or `reason`.
 */
function readWho(request: { user?: unknown }, by: unknown, reason?: unknown): { by: string; reason?: string } {
  const user = fieldsOf(request.user);
  const name = [user.username, user.name, user.email, user.id].find((v) => typeof v === 'string' && v.trim() !== '');
  const who = readPauseBy(name ?? by, reason);
  if ('problem' in who) {
    const [field, ...problem] = who.problem.split(' ');
    throw new DashboardRequestError(field, problem.join(' '));
  }
  return who;
}
