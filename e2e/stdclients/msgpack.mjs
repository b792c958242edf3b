// A standard msgpack library (npm @msgpack/msgpack) against the task API:
// node msgpack.mjs API_BASE TOKEN submits an echo task in msgpack, waits
// for it (?wait=10), reads it again with GET /task/{id}, and prints the
// decoded answers and the payload sent as one JSON line; result_type is
// what `result` decoded to in each answer.
import { decode, encode } from "@msgpack/msgpack";

const [base, token] = process.argv.slice(2);
const payload = { s: "x", n: 42, big: 4294967296, f: 1.5, neg: -7, list: [1, "two", null, false], nested: { ok: true } };
const headers = {
  Authorization: `Bearer ${token}`,
  "Content-Type": "application/msgpack",
  Accept: "application/msgpack",
};
const kind = (v) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);
const read = async (r) => ({
  status: r.status,
  content_type: r.headers.get("content-type"),
  body: decode(new Uint8Array(await r.arrayBuffer())),
});
const submitted = await read(
  await fetch(`${base}/task?wait=10`, { method: "POST", headers, body: encode({ task_type: "echo", payload }) }),
);
const got = await read(await fetch(`${base}/task/${submitted.body.task_id}`, { headers }));
console.log(
  JSON.stringify({
    payload,
    submitted,
    got,
    result_type: [kind(submitted.body.result), kind(got.body.result)],
  }),
);
