// A standard WHATWG EventSource (npm eventsource) on one task's stream:
// node eventsource.mjs URL TOKEN LIMIT_MS prints, as one JSON line, how
// often it opened the stream, the events it got and whether it stopped
// by itself (readyState CLOSED) within LIMIT_MS.
import { EventSource } from "eventsource";

const [url, token, limitMs] = process.argv.slice(2);
let opens = 0;
const events = [];
const es = new EventSource(url, {
  fetch: (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set("Authorization", `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  },
});
es.onopen = () => {
  opens++;
};
for (const type of ["status_update", "progress", "log", "complete"]) {
  es.addEventListener(type, (e) => events.push({ type, id: e.lastEventId, data: JSON.parse(e.data) }));
}
const done = (stopped) => {
  es.close();
  console.log(JSON.stringify({ opens, events, stopped }));
  process.exit(0);
};
es.addEventListener("error", () => {
  if (es.readyState === EventSource.CLOSED) done(true);
});
setTimeout(() => done(false), Number(limitMs));
