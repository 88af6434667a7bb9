import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Names } from '../runner/bench-broker.js';
import type { BenchBody } from './contender.js';
import { ourTopology } from './our-topology.js';

export type ContenderId = 'ours' | 'ours-transport' | 'raw' | 'raw-coalesced' | 'golevelup' | 'nest-rmq' | 'raw-dlx' | 'raw-props';

/** What the runner knows of a contender without loading it (the measured process loads it). */
export interface ContenderInfo {
  id: ContenderId;
  label: string;
  /** The compiled module exporting `contender`, loaded by the measured process. */
  module: string;
  /** The compiled module exporting `publisher`, for the publish scenario; only the contenders it measures have one. */
  publisherModule?: string;
  /** The body as this contender's publishers would send it. */
  encode(body: BenchBody): Buffer;
  /** Every queue and exchange the contender may declare for `queue`, deleted after each run. */
  namesFor(queue: string): Names;
  /** "package version", for the report. */
  package(): string;
}

const distDir = import.meta.dirname; // bench/dist/contenders
const benchDir = join(distDir, '..', '..');
const rootDir = join(benchDir, '..');
const peersDir = join(benchDir, 'peers');

const json = (body: BenchBody) => Buffer.from(JSON.stringify(body));
const justTheQueue = (queue: string): Names => ({ queues: [queue], exchanges: [] });
const packageOf = (name: string, dir: string) =>
  `${name} ${(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version}`;
const rootPackage = (name: string) => () => packageOf(name, join(rootDir, 'node_modules', name));
const peerPackage = (name: string) => () => packageOf(name, join(peersDir, 'node_modules', name));

export const CONTENDERS: Record<ContenderId, ContenderInfo> = {
  ours: {
    id: 'ours',
    label: 'nestjs-amqp-retry',
    module: join(distDir, 'ours.contender.js'),
    publisherModule: join(distDir, 'ours.publisher.js'),
    encode: json,
    namesFor: ourTopology,
    package: () => packageOf('nestjs-amqp-retry', join(rootDir, 'libs', 'amqp-retry')),
  },
  'ours-transport': {
    id: 'ours-transport',
    label: 'nestjs-amqp-retry transport',
    module: join(distDir, 'ours-transport.contender.js'),
    encode: (body) => Buffer.from(JSON.stringify({ pattern: 'bench.message', data: body })),
    namesFor: ourTopology,
    package: () => packageOf('nestjs-amqp-retry', join(rootDir, 'libs', 'amqp-retry')),
  },
  raw: {
    id: 'raw',
    label: 'raw amqplib',
    module: join(distDir, 'raw-amqplib.contender.js'),
    publisherModule: join(distDir, 'raw-amqplib.publisher.js'),
    encode: json,
    namesFor: justTheQueue,
    package: rootPackage('amqplib'),
  },
  'raw-props': {
    id: 'raw-props',
    label: 'raw amqplib, message id and mandatory',
    module: join(distDir, 'raw-amqplib.contender.js'), // consumes as raw; only the publish scenario measures it
    publisherModule: join(distDir, 'raw-amqplib-same-properties.publisher.js'),
    encode: json,
    namesFor: justTheQueue,
    package: rootPackage('amqplib'),
  },
  'raw-coalesced': {
    id: 'raw-coalesced',
    label: 'raw amqplib, acks coalesced',
    module: join(distDir, 'raw-coalesced.contender.js'),
    encode: json,
    namesFor: justTheQueue,
    package: rootPackage('amqplib'),
  },
  golevelup: {
    id: 'golevelup',
    label: '@golevelup/nestjs-rabbitmq',
    module: join(peersDir, 'dist', 'golevelup.contender.js'),
    encode: json,
    namesFor: justTheQueue,
    package: peerPackage('@golevelup/nestjs-rabbitmq'),
  },
  'nest-rmq': {
    id: 'nest-rmq',
    label: 'Nest RMQ transport',
    module: join(peersDir, 'dist', 'nest-rmq.contender.js'),
    // What Nest's ClientProxy.emit sends: the pattern that peers/src/nest-rmq.contender.ts listens to, and the data.
    encode: (body) => Buffer.from(JSON.stringify({ pattern: 'bench.message', data: body })),
    namesFor: justTheQueue,
    package: peerPackage('@nestjs/microservices'),
  },
  'raw-dlx': {
    id: 'raw-dlx',
    label: 'raw amqplib DLX+TTL',
    module: join(distDir, 'raw-dlx-retry.contender.js'),
    encode: json,
    namesFor: (queue) => ({ queues: [queue, `${queue}.retry`], exchanges: [] }),
    package: rootPackage('amqplib'),
  },
};
