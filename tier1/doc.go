// Package tier1 implements standardized ("tier 1") routines: their
// descriptors and hashes, and the compact positional batch format in which
// agents and devices exchange their frames.
//
// # Routines
//
// A routine is described by a [Descriptor] (a CapabilityDescriptor):
//
//	{"capability_id": "synapse.telemetry", "version": "1.0.0",
//	 "name": "Telemetry", "description": "...",
//	 "fields": [{"name": "device_id", "type": "str"},
//	            {"name": "ts", "type": "int", "unit": "ns"},
//	            {"name": "unit", "type": "str", "optional": true}, ...]}
//
// A field's type is one of str (UTF-8 text), int (signed 64-bit), uint
// (unsigned 64-bit), float (IEEE 754 double), bool and bin (bytes). A
// routine has 1 to 64 fields with unique names. The built-in routine is
// [Telemetry], synapse.telemetry 1.0.0:
//
//	#  name       type   notes
//	0  device_id  str
//	1  seq        uint   per-device sequence number
//	2  ts         int    unix time in nanoseconds (unit "ns")
//	3  metric     str
//	4  value      float
//	5  unit       str    optional
//
// An agent holds its routines in a [Registry], one version per
// capability_id. A program runs tier 1 beside its agent as a [Service]
// (synapse serve builds it from the config file's tier1 section): the
// registry, the section in force, and the [Ingestor] it builds over the
// agent's store when the agent opens it (agent.Options.Tier1).
//
// # Descriptor hash
//
// Two agents speak a routine in tier 1 only when their descriptors have
// the same hash: "sha256:" + lower-case hex of the SHA-256 of the canonical
// JSON of the descriptor. Canonical JSON is the object above with
//
//   - keys sorted (byte order; the keys are ASCII) and no whitespace;
//   - "capability_id", "version", "name", "description" and "fields"
//     always present ("fields" an array), "name" and "type" always present
//     in a field, "unit" only when not empty and "optional" only when true;
//   - strings escaped as RFC 8785 (JCS) does: \" \\ \b \f \n \r \t, other
//     control characters as \u00xx in lower-case hex, everything else
//     (including <, >, & and non-ASCII) as literal UTF-8.
//
// The synapse.telemetry descriptor therefore hashes this text:
//
//	{"capability_id":"synapse.telemetry","description":"One metric sample per frame: device, sequence number, timestamp (unix nanoseconds), metric name, value and optional unit.","fields":[{"name":"device_id","type":"str"},{"name":"seq","type":"uint"},{"name":"ts","type":"int","unit":"ns"},{"name":"metric","type":"str"},{"name":"value","type":"float"},{"name":"unit","optional":true,"type":"str"}],"name":"Telemetry","version":"1.0.0"}
//
// # Batch layout
//
// A batch is exactly one msgpack value, with nothing after it:
//
//	[capability_id, version, [frame, ...], batch_id?]
//
//	capability_id  str            names a routine of the receiver
//	version        str            must equal the receiver's version of it
//	frames         array          0 or more frames
//	batch_id       str or nil     optional; absent, nil and "" all mean none
//
// A frame is an array of the field values in descriptor order, without
// keys. A frame may stop early when every field after its last value is
// optional; an optional field in the middle is sent as nil. A frame never
// holds more values than the routine has fields. Decoded frames drop
// trailing nulls, so [a, b, nil] and [a, b] decode to the same frame.
//
// # Accepted encodings
//
// Decoders accept every msgpack encoding of a value that fits its field:
//
//	str    str (fixstr, str 8/16/32), or bin holding valid UTF-8
//	bin    bin (bin 8/16/32), or str
//	int    any int or uint format whose value fits int64
//	uint   any int or uint format whose value is not negative
//	float  float 32, float 64, or any int or uint format (20 reads as 20.0)
//	bool   true, false
//	nil    only for optional fields
//
// Strings must be valid UTF-8. Nothing else is accepted: no float for an
// int field, no ext values, no containers inside frames.
//
// [AppendBatch] and [AppendFrame] write the smallest encoding in the
// value's family: integers in the smallest int format, non-negative ones
// in the unsigned formats (fixint, uint 8-64) as msgpack encoders
// conventionally do; floats as float 32 when that holds the value exactly,
// else float 64; the smallest str, bin and array headers.
//
// # Limits
//
// Untrusted batches are bounded before anything is allocated for them
// (see [Limits]): at most MaxFrames frames (default 100,000); a frames
// array must fit the remaining input at one byte per frame header and per
// required value, so a header that declares 2^32 frames in a few bytes is
// refused at once; str values and batch_id up to MaxStrLen bytes (default
// 4096), bin values up to MaxBinLen (default 64 KiB). A decoded batch costs
// four allocations whatever its size: the batch, its frames, one array of
// values, and one copy of the input that all its strings share.
//
// # Errors
//
// A batch is accepted whole or refused whole. [DecodeBatch] returns an
// error that wraps [ErrUnknownRoutine] (the capability_id is not
// registered), [ErrVersionMismatch], [ErrTooManyFrames] or
// [ErrMalformedBatch] (not an array of 3 or 4, wrong header types,
// truncated, bytes after the batch), or a [*FrameError] naming the index of
// the first bad frame and the field, with the reason:
//
//	frame 3: field "value": msgpack: expected float, found str at offset 147
//	frame 0: field "metric": required field missing
//
// Offsets count bytes from the start of the batch.
//
// # Disk budget
//
// What is kept is bounded by age (retention_hours), per routine (a quota's
// max_bytes, else max_bytes_per_routine), for all routines together
// (max_disk_bytes) and by a floor of free space (min_free_bytes). A
// routine's overflow policy decides what gives: drop_oldest drops its
// oldest frames in the write that goes over; reject_new refuses the new
// batch with storage_quota_exceeded (507, retriable) before storing any of
// it. Every frame dropped is counted per routine, durably, in the
// transaction that drops it ([Ingestor.Disk]); disk.go has the rules.
//
// # Storage
//
// Tier-1's records are this package's, kept in the agent's store through
// store.Records and its byte door store.RawBucket (records.go has the
// buckets, keys and values): the frame blocks of each routine in a
// bucket of its own under t1, their counters (t1_stats), the batch ids
// seen, for deduplication (t1_seen_o, seen.go), and the export log that
// tier1/export forwards upstream (t1_outbox, outbox.go). [CheckRecords]
// is their part of synapse db check.
//
// # Example
//
// The one-frame telemetry batch ["synapse.telemetry", "1.0.0",
// [["sensor-7", 42, 1700000000000000000, "temp", 21.5, "C"]], "b-1"],
// 62 bytes:
//
//	94                                      array of 4: the batch
//	b1 73796e617073652e74656c656d65747279   str 17 "synapse.telemetry"  capability_id
//	a5 312e302e30                           str 5 "1.0.0"               version
//	91                                      array of 1: the frames
//	96                                      array of 6: frame 0
//	a8 73656e736f722d37                     str 8 "sensor-7"            device_id
//	2a                                      fixint 42                   seq
//	cf 17979cfe362a0000                     uint 64 1700000000000000000 ts
//	a4 74656d70                             str 4 "temp"                metric
//	ca 41ac0000                             float 32 21.5               value
//	a1 43                                   str 1 "C"                   unit
//	a3 622d31                               str 3 "b-1"                 batch_id
package tier1
