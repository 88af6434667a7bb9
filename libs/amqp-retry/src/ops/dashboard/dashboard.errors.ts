import { BadGatewayException, BadRequestException, ConflictException, HttpException, InternalServerErrorException } from '@nestjs/common';
import type { RetryLogger } from '../../core/observe/retry.logger.js';
import { ParkedScopeError } from '../../errors/parked-scope.error.js';
import { NotAParkingQueueError } from '../../errors/not-a-parking-queue.error.js';
import { ParkedCountChangedError } from '../../errors/parked-count-changed.error.js';
import { maskCredentials } from '../../core/text/credentials.mask.js';
import { DashboardRequestError } from './dashboard.request.js';

/**
 * The answer to a call that failed while it tried to `what`: bad input (a queue out of the page's scope included)
 * answers 400 with what is wrong; a count that changed since the operator confirmed it 409, naming the count now; a
 * broker failure 502, its message stripped of credentials.
 */
export function httpErrorOf(error: unknown, what: string, wholeVhost: boolean, logger: Pick<RetryLogger, 'error'>): HttpException {
  if (error instanceof DashboardRequestError) return new BadRequestException(error.message);
  if (error instanceof ParkedScopeError && error.subject === '') {
    logger.error(`Could not ${what}: ${error.message}`); // the ParkedMessages given to the page names no queue
    return new InternalServerErrorException(`Could not ${what}: ${error.message}`);
  }
  if (error instanceof ParkedScopeError) return new BadRequestException(scopeRefusal(error, wholeVhost));
  if (error instanceof NotAParkingQueueError) return new BadRequestException(error.message);
  if (error instanceof ParkedCountChangedError) return new ConflictException(error.message);
  if (error instanceof HttpException) return error;
  const message = maskCredentials(error instanceof Error ? error.message : String(error));
  logger.error(`Could not ${what}: ${message}`);
  return new BadGatewayException(`Could not ${what}: ${message}`);
}

/** The page's answer to a call outside its scope: what it shows, and how an operator widens it, nothing of the queue named. */
function scopeRefusal(error: ParkedScopeError, wholeVhost: boolean): string {
  const named = JSON.stringify(error.subject);
  return wholeVhost
    ? `${named} is not a queue of this vhost's handlers.`
    : `${named} is not a queue of this application's handlers: the page shows ${error.scope} (RetryDashboardModule option wholeVhost shows every application's).`;
}
