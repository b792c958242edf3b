// Package taskrec is the compact binary layout of a task record (schema
// 8): the task's fields in a fixed order with lengths and varints instead
// of JSON keys, its status names as one byte, its times as deltas from
// its creation, a result equal to the payload written once, and the
// events kept with it reduced to what they do not share with the task
// (a status_update event is its history entry and its progress; the
// error and complete events are derived from the task's final state).
// Every value it decodes is what the JSON record of the same task
// decodes to (taskrec_test.go compares the two); what it cannot write
// that way (a time outside UTC, a string that is not UTF-8) it refuses,
// and the store writes the JSON record instead. Package store frames the
// record (store/record.go) and owns the buckets.
package taskrec
