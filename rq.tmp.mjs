import amqp from 'amqplib';
const url = process.argv[2];
const c = await amqp.connect(url); const ch = await c.createConfirmChannel();
const id = Math.random().toString(36).slice(2,8);
const Q = `rq.${id}`, T = `rq.${id}.t`, R = `rq.${id}.ret`, D=`rq.${id}.dlx`;
const q = {'x-queue-type':'quorum','x-dead-letter-strategy':'at-least-once'};
await ch.assertExchange(R, 'fanout', {durable:true}); await ch.assertExchange(D, 'fanout', {durable:true});
await ch.assertQueue(Q, {durable:true, arguments:{...q,'x-max-length':1,'x-overflow':'reject-publish','x-dead-letter-exchange':D}});
await ch.assertQueue(T, {durable:true, arguments:{...q, 'x-overflow':'reject-publish', 'x-message-ttl':300,'x-dead-letter-exchange':R}});
await ch.bindQueue(Q, R, ''); await ch.bindQueue(T, D, '');
ch.sendToQueue(Q, Buffer.from('fill1')); await ch.waitForConfirms();
ch.sendToQueue(Q, Buffer.from('fill2')); await ch.waitForConfirms();
ch.sendToQueue(T, Buffer.from('retry')); await ch.waitForConfirms();
await new Promise(r=>setTimeout(r,1500));
const t0 = Date.now();
await ch.get(Q,{noAck:true}); await ch.get(Q,{noAck:true});
while (Date.now() - t0 < 200000) { const n = (await ch.checkQueue(Q)).messageCount; if (n > 0) { console.log('retry back after', Date.now()-t0, 'ms'); break; } await new Promise(r=>setTimeout(r,500)); }
console.log('end Q', (await ch.checkQueue(Q)).messageCount);
for (const x of [Q,T]) await ch.deleteQueue(x); for (const x of [R,D]) await ch.deleteExchange(x); await c.close();
