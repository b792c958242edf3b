package httpapi_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/wire"
)

type formFile struct {
	field, name, contentType string
	data                     []byte
}

// multipartBody builds a multipart/form-data body and its Content-Type.
func multipartBody(t *testing.T, fields map[string]string, files ...formFile) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := w.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="`+f.field+`"; filename="`+f.name+`"`)
		h.Set("Content-Type", f.contentType)
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w.FormDataContentType()
}

func TestMultipart(t *testing.T) {
	ts := startServerLimits(t, func(l *httpapi.Limits) { l.MaxBodyBytes = 4096 }, func(c *agent.Config) { c.MaxFileSize = 1024 })

	t.Run("file in the payload", func(t *testing.T) {
		data := []byte("hello, synapse\n")
		body, ct := multipartBody(t, map[string]string{"task_type": "echo", "payload": `{"a":1}`},
			formFile{"doc", "note.txt", "text/plain", data})
		r := ts.do(t, "POST", api("/task/multipart"), body, withHeader("Content-Type", ct))
		r.wantStatus(t, http.StatusCreated)
		id := r.object(t)["task_id"].(string)
		done := ts.waitStatus(t, id, wire.StatusCompleted)
		var res struct {
			A     int `json:"a"`
			Files []struct {
				Field       string `json:"field"`
				Filename    string `json:"filename"`
				ContentType string `json:"content_type"`
				Size        int64  `json:"size"`
				SHA256      string `json:"sha256"`
				Data        string `json:"data"`
			} `json:"files"`
		}
		if err := json.Unmarshal([]byte(done["result_json"].(string)), &res); err != nil {
			t.Fatalf("result_json: %v", err)
		}
		if res.A != 1 || len(res.Files) != 1 {
			t.Fatalf("result = %+v, want a=1 and one file", res)
		}
		f := res.Files[0]
		sum := sha256.Sum256(data)
		if f.Filename != "note.txt" || f.Size != int64(len(data)) || f.SHA256 != hex.EncodeToString(sum[:]) ||
			f.Field != "doc" || f.ContentType != "text/plain" {
			t.Errorf("file = %+v, want note.txt, %d bytes, sha256 %x, field doc, text/plain", f, len(data), sum)
		}
		if got, _ := base64.StdEncoding.DecodeString(f.Data); !bytes.Equal(got, data) {
			t.Errorf("file data = %q, want %q", got, data)
		}
	})

	t.Run("file over max_file_size", func(t *testing.T) {
		body, ct := multipartBody(t, map[string]string{"task_type": "echo", "payload": `{}`},
			formFile{"doc", "big.bin", "application/octet-stream", bytes.Repeat([]byte{0xab}, 2048)})
		e := ts.do(t, "POST", api("/task/multipart"), body, withHeader("Content-Type", ct)).
			wantError(t, http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge)
		if d, _ := e["details"].(map[string]any); d["filename"] != "big.bin" {
			t.Errorf("details = %v, want filename big.bin", e["details"])
		}
		if got := ts.listIDs(t, "page_size=10"); len(got) != 1 {
			t.Errorf("tasks = %v, want only the first test's", got)
		}
	})

	t.Run("body over max_body_bytes with a query string", func(t *testing.T) {
		// The multipart route allows bodies up to max_file_size + 1 MiB,
		// with or without ?wait=.
		body, ct := multipartBody(t, map[string]string{"task_type": "echo", "payload": `{}`},
			formFile{"a", "a.bin", "application/octet-stream", bytes.Repeat([]byte{1}, 1000)},
			formFile{"b", "b.bin", "application/octet-stream", bytes.Repeat([]byte{2}, 1000)},
			formFile{"c", "c.bin", "application/octet-stream", bytes.Repeat([]byte{3}, 1000)},
			formFile{"d", "d.bin", "application/octet-stream", bytes.Repeat([]byte{4}, 1000)},
			formFile{"e", "e.bin", "application/octet-stream", bytes.Repeat([]byte{5}, 1000)})
		if len(body) <= 4096 {
			t.Fatalf("body is %d bytes, want over max_body_bytes", len(body))
		}
		r := ts.do(t, "POST", api("/task/multipart?wait=5"), body, withHeader("Content-Type", ct))
		r.wantStatus(t, http.StatusOK)
		var res struct {
			Files []json.RawMessage `json:"files"`
		}
		if err := json.Unmarshal([]byte(r.object(t)["result_json"].(string)), &res); err != nil || len(res.Files) != 5 {
			t.Errorf("result has %d files (%v), want 5", len(res.Files), err)
		}
	})

	t.Run("bad forms", func(t *testing.T) {
		body, ct := multipartBody(t, map[string]string{"task_type": "echo", "payload": `[1]`})
		ts.do(t, "POST", api("/task/multipart"), body, withHeader("Content-Type", ct)).
			wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
		body, ct = multipartBody(t, map[string]string{"payload": `{}`})
		ts.do(t, "POST", api("/task/multipart"), body, withHeader("Content-Type", ct)).
			wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
		ts.do(t, "POST", api("/task/multipart"), []byte(`{"task_type":"echo"}`)).
			wantError(t, http.StatusUnsupportedMediaType, wire.CodeUnsupportedMedia)
		ts.do(t, "POST", api("/task/multipart"), []byte("--x\r\nbroken"), withHeader("Content-Type", "multipart/form-data; boundary=x")).
			wantError(t, http.StatusBadRequest, wire.CodeMessageFormatInvalid)
	})
}
