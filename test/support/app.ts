import { Injectable, type INestApplicationContext, type Provider, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RetryModule, RetryWithBackoff, type RetryContext, type RetryHandlerOptions, type RetryModuleOptions } from 'nestjs-amqp-retry';
import type { MessageProperties } from 'amqplib';
import { AMQP_URL } from './broker.js';

/** One handler call as the test saw it. */
export interface Call {
  payload: unknown;
  attempt: number;
  isLastAttempt: boolean;
  at: number;
  redelivered: boolean;
  properties: MessageProperties;
}

export type Behaviour = (payload: unknown, context: RetryContext) => unknown;

/** Builds a handler class for `options` (decorators run at class definition, hence a class per test). */
export function handlerFor(options: RetryHandlerOptions, behaviour: Behaviour) {
  @Injectable()
  class TestHandler {
    readonly calls: Call[] = [];

    @RetryWithBackoff(options)
    async handle(payload: unknown, context: RetryContext): Promise<void> {
      this.calls.push({
        payload,
        attempt: context.attempt,
        isLastAttempt: context.isLastAttempt,
        at: Date.now(),
        redelivered: context.message.fields.redelivered,
        properties: context.message.properties,
      });
      await behaviour(payload, context);
    }
  }
  return TestHandler;
}

/**
 * Delayed delivery is off unless a test asks for it: the delay tests use ladders of their own (uuid prefixes) and
 * delete them, and the other tests should leave no ladder behind.
 */
export const TEST_OPTIONS: RetryModuleOptions = { url: AMQP_URL, delayedDelivery: false };

/**
 * Creates an application context with RetryModule and the given providers and runs `init()`: when this resolves,
 * the topology is declared and the consumers run. `moduleOptions: 'env'` passes no options (environment only).
 */
export async function startApp(
  providers: Provider[],
  moduleOptions: RetryModuleOptions | 'env' = { url: AMQP_URL },
): Promise<INestApplicationContext> {
  const app = await createApp(providers, moduleOptions);
  await app.init();
  return app;
}

/** Like startApp, without `init()`. */
export async function createApp(
  providers: Provider[],
  moduleOptions: RetryModuleOptions | 'env' = { url: AMQP_URL },
): Promise<INestApplicationContext> {
  const app = await Test.createTestingModule({
    imports: [moduleOptions === 'env' ? RetryModule.forRoot() : RetryModule.forRoot(moduleOptions)],
    providers,
  }).compile();
  app.useLogger(process.env.TEST_LOGS ? ['log', 'warn', 'error', 'debug'] : false);
  return app;
}

/** The handler instance of a started application. */
export const handlerOf = <T>(app: INestApplicationContext, type: Type<T>): T => app.get(type);
