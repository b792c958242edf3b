package mqtt

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// Options configure the connection to the broker. The command fills them
// from the "mqtt" section of the config file.
type Options struct {
	// URL is mqtt://host:port (plain TCP, default port 1883) or
	// mqtts://host:port (TLS, default port 8883).
	URL string
	// URLs are more brokers of the same cluster, in the scheme of URL:
	// when the broker in use is gone the client connects to the next
	// (the client library tries them in turn, URL first), and its
	// persistent session, kept by the cluster, resumes there.
	URLs []string
	// ClientID names the session at the broker; it must be stable across
	// restarts for the persistent session to resume. Default: the agent_id.
	ClientID string
	// Username and Password, when the broker wants them.
	Username, Password string
	// CAFile verifies the broker's certificate (default: the system's
	// roots); CertFile and KeyFile are the client certificate, both or
	// neither.
	CAFile, CertFile, KeyFile string
	// TopicPrefix starts every topic (default "synapse").
	TopicPrefix string
	// KeepAlive is the MQTT keep-alive (default 30 s): the broker
	// declares the client gone after 1.5 times it without a packet.
	KeepAlive time.Duration
	// MaxReconnectInterval caps the back-off between connection attempts
	// (default 30 s); it starts at 1 s and doubles, with jitter.
	MaxReconnectInterval time.Duration
	// AnswerTimeout bounds the wait for a peer's answer to an envelope
	// (default 10 s): a request or answer lost on the way (the peer had
	// no session at the broker, the broker restarted) is sent again after
	// it, by the outbox.
	AnswerTimeout time.Duration
	// Announce is published retained on every connection, and Will is
	// the broker's Last Will for this client (retained): the presence
	// card and its offline form (presence.go).
	Announce, Will *Retained
	// Logger gets the connection's changes (default: discard).
	Logger *slog.Logger
}

// Retained is a retained message.
type Retained struct {
	Topic   string
	Payload []byte
}

// DefaultTopicPrefix starts every topic when Options.TopicPrefix is empty.
const DefaultTopicPrefix = "synapse"

// Errors of the configuration.
var (
	ErrBadURL    = errors.New("mqtt: url must be mqtt://host:port or mqtts://host:port")
	ErrBadPrefix = errors.New("mqtt: topic_prefix must be topic levels without wildcards (+, #), empty levels or a leading /")
)

func (o *Options) setDefaults() {
	if o.TopicPrefix == "" {
		o.TopicPrefix = DefaultTopicPrefix
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 30 * time.Second
	}
	if o.AnswerTimeout <= 0 {
		o.AnswerTimeout = 10 * time.Second
	}
	if o.MaxReconnectInterval <= 0 {
		o.MaxReconnectInterval = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate checks the options without touching files or the network; the
// error names the bad field.
func (o *Options) Validate() error {
	if _, _, err := o.brokers(); err != nil {
		return err
	}
	if o.ClientID == "" {
		return errors.New("mqtt: client_id must not be empty")
	}
	if len(o.ClientID) > 65535 || strings.ContainsRune(o.ClientID, 0) {
		return errors.New("mqtt: client_id must be at most 65535 bytes without NUL")
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return errors.New("mqtt: cert_file and key_file go together")
	}
	if p := o.TopicPrefix; p != "" {
		for _, level := range strings.Split(p, "/") {
			if !validLevel(level) {
				return fmt.Errorf("%w: %q", ErrBadPrefix, p)
			}
		}
	}
	return nil
}

// ErrMixedSchemes refuses a list of brokers with TLS and without.
var ErrMixedSchemes = errors.New("mqtt: every broker of urls must use the scheme of url")

// brokers parses URL and URLs into the addresses the client library
// dials, in order; all are TLS or none is.
func (o *Options) brokers() (dials []string, useTLS bool, err error) {
	for i, raw := range append([]string{o.URL}, o.URLs...) {
		dial, tls, err := brokerAddr(raw)
		if err != nil {
			return nil, false, err
		}
		if i > 0 && tls != useTLS {
			return nil, false, fmt.Errorf("%w, got %q", ErrMixedSchemes, raw)
		}
		dials, useTLS = append(dials, dial), tls
	}
	return dials, useTLS, nil
}

// brokerAddr parses an mqtt:// or mqtts:// URL into the form the client
// library dials (tcp://host:port or ssl://host:port).
func brokerAddr(raw string) (dial string, useTLS bool, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", false, fmt.Errorf("%w, got %q", ErrBadURL, raw)
	}
	port := u.Port()
	switch u.Scheme {
	case "mqtt":
		if port == "" {
			port = "1883"
		}
		return "tcp://" + net.JoinHostPort(u.Hostname(), port), false, nil
	case "mqtts":
		if port == "" {
			port = "8883"
		}
		return "ssl://" + net.JoinHostPort(u.Hostname(), port), true, nil
	}
	return "", false, fmt.Errorf("%w, got %q", ErrBadURL, raw)
}

// tlsConfig reads the CA and client certificate files.
func (o *Options) tlsConfig(host string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("mqtt: ca_file: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("mqtt: ca_file %s holds no PEM certificate", o.CAFile)
		}
	}
	if o.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("mqtt: cert_file/key_file: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}
