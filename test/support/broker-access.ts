import { randomUUID } from 'node:crypto';
import { ctl } from './broker-control.js';
import { AMQP_URL } from './broker.js';

/** A vhost of a test's own: its name, the AMQP URL of the test broker's user on it, or of another user. */
export interface Vhost {
  name: string;
  url(user?: string, password?: string): string;
}

/** A broker user of a test's own. */
export interface BrokerUser {
  name: string;
  password: string;
}

/** What deletes a vhost or user once it exists: `onAdded` receives it right after the add. */
type OnAdded = (remove: () => Promise<unknown>) => void;

/** Adds the vhost `name` (`args` go to add_vhost) on the test broker, where the test broker's user may do anything. */
export async function addVhost(name: string, args: string[], onAdded: OnAdded): Promise<Vhost> {
  await ctl('add_vhost', name, ...args);
  onAdded(() => ctl('delete_vhost', name));
  const at = new URL(AMQP_URL.split(',')[0]); // the first node of a cluster's URL list
  await ctl('set_permissions', '-p', name, decodeURIComponent(at.username) || 'guest', '.*', '.*', '.*');
  at.pathname = `/${encodeURIComponent(name)}`;
  const url = (user?: string, password?: string) => {
    const as = new URL(at);
    if (user !== undefined) [as.username, as.password] = [user, password ?? ''];
    return as.toString();
  };
  return { name, url };
}

/** Adds the user `name` with a random password and the permissions configure, write, read on `vhost`. */
export async function addUser(name: string, vhost: string, permissions: [string, string, string], onAdded: OnAdded): Promise<BrokerUser> {
  const password = randomUUID();
  await ctl('add_user', name, password);
  onAdded(() => ctl('delete_user', name));
  await ctl('set_permissions', '-p', vhost, name, ...permissions);
  return { name, password };
}
