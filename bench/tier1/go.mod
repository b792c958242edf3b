module github.com/synapse-edge/synapse/bench/tier1

go 1.26.8

require (
	github.com/eclipse/paho.mqtt.golang v1.5.1
	github.com/fasthttp/websocket v1.5.12
	github.com/nats-io/nats.go v1.55.0
	github.com/synapse-edge/synapse v0.0.0
	github.com/valyala/fasthttp v1.78.0
	go.etcd.io/bbolt v1.5.0
)

require (
	github.com/google/btree v1.1.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/savsgio/gotils v0.0.0-20240704082632-aef3928b8a38 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/synapse-edge/synapse => ../..
