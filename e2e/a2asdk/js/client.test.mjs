// @a2a-js/sdk 1.3.0's client (JSON-RPC, built from the card) against the
// servers in A2A_TARGETS (JSON: [{name, base, token, known}]), which the Go
// test TestJSSDK starts: Synapse, a2a-go's server and the JS SDK's own
// server. Every method, errors included; assertions a reference server is
// known to fail (known: {what: why}) are logged for it, not asserted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { TaskState, Role } from '@a2a-js/sdk';
import { TaskNotFoundError, TaskNotCancelableError, UnsupportedOperationError } from '@a2a-js/sdk/errors';

const targets = JSON.parse(process.env.A2A_TARGETS || '[]');

let seq = 0;
function message(taskType, ...parts) {
  return {
    messageId: `js-${process.pid}-${++seq}`, role: Role.ROLE_USER, parts,
    metadata: taskType ? { task_type: taskType } : undefined,
  };
}
const text = (value) => ({ content: { $case: 'text', value } });
const data = (value) => ({ content: { $case: 'data', value } });
const resultData = (task) => {
  const a = (task.artifacts || []).find((x) => x.artifactId === 'result');
  return a && a.parts[0].content && a.parts[0].content.value;
};

async function client(t) {
  const fetchImpl = (url, init) => {
    const headers = { ...(init && init.headers) };
    if (t.token) headers.Authorization = `Bearer ${t.token}`;
    return fetch(url, { ...init, headers });
  };
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
  }));
  return factory.createFromUrl(t.base);
}

function differs(t, what, ctx) {
  const why = t.known && t.known[what];
  if (why) ctx.diagnostic(`${t.name}: not asserted: ${why}`);
  return Boolean(why);
}

async function rejects(p, cls) {
  try {
    await p;
  } catch (e) {
    // Errors of streams come wrapped, the A2A error as the cause.
    return e instanceof cls || e.cause instanceof cls ? null : e;
  }
  return new Error('no error');
}

async function drain(gen) {
  const events = [];
  for await (const ev of gen) events.push(ev.payload);
  return events;
}

for (const t of targets) {
  test(`${t.name}: every method through the JS SDK client`, async (ctx) => {
    const c = await client(t);

    await ctx.test('send blocking', async () => {
      const res = await c.sendMessage({ message: message('', text('hello')) });
      assert.equal(res.status.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(resultData(res).text, 'hello');
    });

    const running = await c.sendMessage({ message: message('sleep', data({ ms: 60000 })), configuration: { returnImmediately: true } });
    await ctx.test('send non-blocking, get', async () => {
      assert.ok(![TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED].includes(running.status.state));
      const got = await c.getTask({ id: running.id, historyLength: 0 });
      assert.equal(got.id, running.id);
      assert.equal((got.history || []).length, 0);
    });

    await ctx.test('list', async () => {
      const page = await c.listTasks({ pageSize: 1, status: TaskState.TASK_STATE_UNSPECIFIED });
      assert.equal(page.tasks.length, 1);
      assert.ok(page.nextPageToken, 'a next page token');
      assert.ok(page.totalSize >= 2, `totalSize ${page.totalSize}`);
      assert.equal((page.tasks[0].artifacts || []).length, 0, 'no artifacts unless asked');
      const next = await c.listTasks({ pageSize: 1, pageToken: page.nextPageToken, status: TaskState.TASK_STATE_UNSPECIFIED });
      assert.notEqual(next.tasks[0].id, page.tasks[0].id);
    });

    await ctx.test('push config', async () => {
      const url = 'http://127.0.0.1:9/hook';
      const set = await c.createTaskPushNotificationConfig({ taskId: running.id, id: 'p1', url, token: 'tk' });
      assert.equal(set.id, 'p1');
      const got = await c.getTaskPushNotificationConfig({ taskId: running.id, id: 'p1' });
      assert.equal(got.url, url);
      assert.equal(got.token, 'tk');
      const list = await c.listTaskPushNotificationConfig({ taskId: running.id });
      assert.deepEqual(list.configs.map((x) => x.id), ['p1']);
      await c.deleteTaskPushNotificationConfig({ taskId: running.id, id: 'p1' });
      await assert.rejects(c.getTaskPushNotificationConfig({ taskId: running.id, id: 'p1' }));
    });

    await ctx.test('cancel', async (sub) => {
      const tk = await c.cancelTask({ id: running.id });
      assert.equal(tk.status.state, TaskState.TASK_STATE_CANCELED);
      const err = await rejects(c.cancelTask({ id: running.id }), TaskNotCancelableError);
      if (err && !differs(t, 'cancel twice', sub)) assert.fail(`second cancel: ${err}`);
    });

    await ctx.test('stream', async () => {
      const events = await drain(c.sendMessageStream({ message: message('sleep', data({ ms: 100 })) }));
      assert.equal(events[0].$case, 'task');
      const last = events[events.length - 1];
      assert.equal(last.$case, 'statusUpdate');
      assert.equal(last.value.status.state, TaskState.TASK_STATE_COMPLETED);
      const art = events.find((e) => e.$case === 'artifactUpdate');
      assert.equal(art.value.artifact.parts[0].content.value.slept_ms, 100);
    });

    await ctx.test('resubscribe', async () => {
      const tk = await c.sendMessage({ message: message('sleep', data({ ms: 300 })), configuration: { returnImmediately: true } });
      const events = await drain(c.resubscribeTask({ id: tk.id }));
      const states = events.filter((e) => e.$case === 'statusUpdate').map((e) => e.value.status.state);
      assert.equal(states[states.length - 1], TaskState.TASK_STATE_COMPLETED);
    });

    await ctx.test('errors', async (sub) => {
      assert.equal(await rejects(c.getTask({ id: 'nope' }), TaskNotFoundError), null);
      assert.equal(await rejects(c.cancelTask({ id: 'nope' }), TaskNotFoundError), null);
      assert.equal(await rejects(drain(c.resubscribeTask({ id: 'nope' })), TaskNotFoundError), null);
      const err = await rejects(c.sendMessage({ message: message('teleport', text('x')) }), UnsupportedOperationError);
      if (err && !differs(t, 'executor error', sub)) assert.fail(`unknown task type: ${err}`);
      const done = await c.sendMessage({ message: message('', text('x')) });
      const final = await rejects(drain(c.resubscribeTask({ id: done.id })), UnsupportedOperationError);
      if (final && !differs(t, 'subscribe final', sub)) assert.fail(`subscribe to a final task: ${final}`);
    });
  });

  if (t.token) {
    test(`${t.name}: a wrong token is refused with 401, streams too`, async () => {
      const c = await client(t);
      const bad = await client({ ...t, token: 'wrong' });
      // The 401's body is a JSON-RPC error (-31401 unauthenticated) the
      // client decodes, on a plain call and on a stream alike.
      const unauthenticated = (e) => e.envelopeCode === -31401 || (e.cause && e.cause.envelopeCode === -31401) || /\b401\b/.test(e.message);
      await assert.rejects(bad.getTask({ id: 'x' }), unauthenticated);
      await assert.rejects(drain(bad.sendMessageStream({ message: message('', text('x')) })), unauthenticated);
      assert.ok((await c.listTasks({ pageSize: 1, status: TaskState.TASK_STATE_UNSPECIFIED })).tasks.length >= 0);
    });
  }
}
