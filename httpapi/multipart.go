package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// maxFileParts bounds the number of files in one multipart request.
const maxFileParts = 32

// uploadedFile is how a file part appears in the task payload, under
// "files": its bytes travel base64-encoded inside the stored payload, so a
// task and its files are durable together.
type uploadedFile struct {
	Field       string `json:"field"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
	Data        []byte `json:"data"`
}

// submitMultipart serves POST /task/multipart: fields task_type and payload
// (JSON object), optional callback_url, ttl_seconds, idempotency_key,
// priority; every file part is added to payload.files.
func (s *Server) submitMultipart(ctx *fasthttp.RequestCtx, p auth.Principal, _ []string) error {
	form, err := ctx.MultipartForm()
	if err != nil {
		if errors.Is(err, fasthttp.ErrNoMultipartForm) {
			return wire.Errorf(wire.CodeUnsupportedMedia, "use Content-Type: multipart/form-data")
		}
		return wire.Errorf(wire.CodeMessageFormatInvalid, "multipart body: %v", err)
	}
	defer ctx.Request.RemoveMultipartFormFiles()
	val := func(name string) string {
		if v := form.Value[name]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	req := wire.SubmitRequest{TaskType: val("task_type"), CallbackURL: val("callback_url"),
		IdempotencyKey: val("idempotency_key"), Priority: val("priority")}
	if v := val("ttl_seconds"); v != "" {
		if err := json.Unmarshal([]byte(v), &req.TTLSeconds); err != nil {
			return wire.Errorf(wire.CodeInvalidParams, "ttl_seconds must be a whole number").With("field", "ttl_seconds")
		}
	}
	payload := map[string]any{}
	if v := val("payload"); v != "" {
		if err := json.Unmarshal([]byte(v), &payload); err != nil {
			return wire.Errorf(wire.CodeInvalidParams, "payload must be a JSON object: %v", err).With("field", "payload")
		}
	}
	var files []uploadedFile
	max := s.a.Config().MaxFileSize
	for field, fhs := range form.File {
		for _, fh := range fhs {
			if len(files) == maxFileParts {
				return wire.Errorf(wire.CodeInvalidParams, "at most %d files per task", maxFileParts)
			}
			if fh.Size > max {
				return wire.Errorf(wire.CodePayloadTooLarge, "file %q is %d bytes; max_file_size is %d", fh.Filename, fh.Size, max).
					With("filename", fh.Filename).With("max_file_size", max)
			}
			f, err := readPart(fh, max)
			if err != nil {
				return err
			}
			f.Field = field
			files = append(files, f)
		}
	}
	if len(files) > 0 {
		payload["files"] = files
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "payload: %v", err)
	}
	req.Payload = raw
	return s.submitRequest(ctx, p, &req)
}

func readPart(fh *multipart.FileHeader, max int64) (uploadedFile, error) {
	rd, err := fh.Open()
	if err != nil {
		return uploadedFile{}, wire.Errorf(wire.CodeMessageFormatInvalid, "file %q: %v", fh.Filename, err)
	}
	defer rd.Close()
	data, err := io.ReadAll(io.LimitReader(rd, max+1))
	if err != nil {
		return uploadedFile{}, wire.Errorf(wire.CodeMessageFormatInvalid, "file %q: %v", fh.Filename, err)
	}
	if int64(len(data)) > max {
		return uploadedFile{}, wire.Errorf(wire.CodePayloadTooLarge, "file %q is larger than max_file_size (%d)", fh.Filename, max)
	}
	sum := sha256.Sum256(data)
	return uploadedFile{Filename: fh.Filename, ContentType: fh.Header.Get("Content-Type"),
		Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Data: data}, nil
}
