// Builds a synapse.telemetry tier-1 batch byte by byte, following the
// layout documented in tier1/doc.go, without any msgpack library:
//
//   [capability_id, version, [frame, ...], batch_id]
//   frame = [device_id str, seq uint, ts int, metric str, value float, unit str?]
//
// It deliberately uses several encodings a dynamic-language client may
// produce: the value 20.0 as the integer 20, seq as uint8/uint16/uint32,
// ts as int64 and as uint64, value as float32 and float64, and a frame
// without its optional unit. Prints the batch as hex on stdout.
'use strict';

const out = [];
const u8 = (...b) => out.push(...b);
const str = (s) => {
  const b = Buffer.from(s, 'utf8');
  if (b.length < 32) u8(0xa0 | b.length);
  else { u8(0xd9, b.length); }
  out.push(...b);
};
const be = (n, bytes) => { // unsigned big-endian of a BigInt
  const r = [];
  for (let i = bytes - 1; i >= 0; i--) r.push(Number((n >> BigInt(8 * i)) & 0xffn));
  return r;
};
const f64 = (x) => { const b = Buffer.alloc(8); b.writeDoubleBE(x); u8(0xcb, ...b); };
const f32 = (x) => { const b = Buffer.alloc(4); b.writeFloatBE(x); u8(0xca, ...b); };

const ts = BigInt(process.argv[2] || '1795000000000000000');

u8(0x94);                       // array of 4
str('synapse.telemetry');
str('1.0.0');
u8(0x94);                       // 4 frames
// frame 0: value 20.0 sent as positive fixint 20, seq as uint8
u8(0x96); str('node-dev-1'); u8(0xcc, 200); u8(0xd3, ...be(ts, 8)); str('temp'); u8(20); str('C');
// frame 1: seq as uint16, ts as uint64, value as float64
u8(0x96); str('node-dev-1'); u8(0xcd, ...be(513n, 2)); u8(0xcf, ...be(ts + 1n, 8)); str('temp'); f64(21.25); str('C');
// frame 2: seq as uint32, value as float32, no unit (optional, omitted)
u8(0x95); str('node-dev-2'); u8(0xce, ...be(70000n, 4)); u8(0xd3, ...be(ts + 2n, 8)); str('humidity'); f32(0.5);
// frame 3: value as negative int8, unit nil
u8(0x96); str('node-dev-2'); u8(3); u8(0xd3, ...be(ts + 3n, 8)); str('temp'); u8(0xd0, 0xfb); u8(0xc0);
str('node-batch-1');            // batch_id

process.stdout.write(Buffer.from(out).toString('hex'));
