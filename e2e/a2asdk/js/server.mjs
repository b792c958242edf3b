// The reference agent on @a2a-js/sdk's own server (in memory, express):
// the echo and sleep task types as Synapse runs them. Usage:
//   node server.mjs PORT
// It prints "listening PORT" when ready.
import express from 'express';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, InMemoryPushNotificationStore, DefaultPushNotificationSender } from '@a2a-js/sdk/server';
import { jsonRpcHandler, agentCardHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { TaskState } from '@a2a-js/sdk';
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';

const port = Number(process.argv[2] || 0);

function payload(message) {
  let taskType = 'echo';
  const tt = message.metadata && message.metadata.task_type;
  if (typeof tt === 'string' && tt !== '') taskType = tt;
  let data;
  const texts = [];
  for (const p of message.parts || []) {
    const c = p.content;
    if (!c) continue;
    if (c.$case === 'text') texts.push(c.value);
    if (c.$case === 'data' && data === undefined && c.value && typeof c.value === 'object' && !Array.isArray(c.value)) data = { ...c.value };
  }
  data = data || {};
  if (texts.length > 0) data.text = texts.join('\n');
  return { taskType, data };
}

const part = (value) => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: '' });
const status = (state) => ({ state, message: undefined, timestamp: new Date().toISOString() });

class Executor {
  constructor() { this.cancelled = new Set(); }
  async execute(ctx, bus) {
    const msg = ctx.userMessage;
    const { taskType, data } = payload(msg);
    const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
    if (taskType !== 'echo' && taskType !== 'sleep') {
      throw new UnsupportedOperationError(`no handler for task type ${taskType}`);
    }
    if (!ctx.task) {
      bus.publish(AgentEvent.task({ id: ctx.taskId, contextId: ctx.contextId, status: status(TaskState.TASK_STATE_SUBMITTED), artifacts: [], history: [msg], metadata: undefined }));
    }
    bus.publish(AgentEvent.statusUpdate({ ...ids, status: status(TaskState.TASK_STATE_WORKING), metadata: undefined }));
    let result = data;
    if (taskType === 'sleep') {
      await new Promise((r) => setTimeout(r, Number(data.ms) || 0));
      result = { slept_ms: Number(data.ms) || 0 };
    }
    if (this.cancelled.has(ctx.taskId)) { bus.finished(); return; }
    bus.publish(AgentEvent.artifactUpdate({ ...ids, artifact: { artifactId: 'result', name: 'result', description: '', parts: [part(result)], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
    bus.publish(AgentEvent.statusUpdate({ ...ids, status: status(TaskState.TASK_STATE_COMPLETED), metadata: undefined }));
    bus.finished();
  }
  async cancelTask(taskId, bus) {
    this.cancelled.add(taskId);
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId: taskId, status: status(TaskState.TASK_STATE_CANCELED), metadata: undefined }));
    bus.finished();
  }
}

const app = express();
const server = app.listen(port, '127.0.0.1', () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: 'a2a-js reference', description: '@a2a-js/sdk in-memory server with the echo and sleep task types', version: 'ref',
    supportedInterfaces: [
      { url: `${base}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
      { url: `${base}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' },
    ],
    capabilities: { streaming: true, pushNotifications: true, extensions: [] },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text/plain', 'application/json'], defaultOutputModes: ['application/json'],
    skills: [{ id: 'echo', name: 'echo', description: 'echo', tags: ['echo'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
  const pushStore = new InMemoryPushNotificationStore();
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Executor(), undefined, pushStore, new DefaultPushNotificationSender(pushStore));
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: { getAgentCard: async () => card } }));
  app.use('/a2a', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
  console.log(`listening ${server.address().port}`);
});
