package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/towerdefence/platformctl/internal/platform"
)

// maxBodyBytes is the largest request body any route accepts.
const maxBodyBytes = 1 << 20

// errorBody is the one error shape of the API.
type errorBody struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Codes only the HTTP layer produces.
const (
	codeInvalidJSON          = "INVALID_JSON"
	codeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	codePayloadTooLarge      = "PAYLOAD_TOO_LARGE"
	codeMethodNotAllowed     = "METHOD_NOT_ALLOWED"
)

// httpError is a failure that exists only at the HTTP layer (wrong media
// type, oversized body, wrong method) and so has its own status.
type httpError struct {
	status  int
	code    string
	message string
}

func (e *httpError) Error() string { return e.code + ": " + e.message }

// statusOf is the one place where error kinds become HTTP statuses.
func statusOf(kind platform.Kind) int {
	switch kind {
	case platform.KindInvalid:
		return http.StatusBadRequest
	case platform.KindUnauthenticated:
		return http.StatusUnauthorized
	case platform.KindForbidden:
		return http.StatusForbidden
	case platform.KindNotFound:
		return http.StatusNotFound
	case platform.KindConflict:
		return http.StatusConflict
	case platform.KindUnprocessable:
		return http.StatusUnprocessableEntity
	case platform.KindRateLimited:
		return http.StatusTooManyRequests
	case platform.KindUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// unencodableBody answers a value JSON cannot encode. Only a programming
// error gets there; the answer keeps the error model anyway.
const unencodableBody = `{"code":"INTERNAL_ERROR","message":"internal error"}`

// respond writes v as JSON with the given status.
func respond(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(unencodableBody)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	w.Write(append(body, '\n')) //nolint:errcheck // the client went away; nothing to do
}

// statusClientClosed is the status logged for a request its client
// abandoned (nginx's convention).
const statusClientClosed = 499

// respondErr writes err in the error model. Expected errors show their
// code and message; anything else is logged once, with the request id, and
// answered as a bare INTERNAL_ERROR.
func respondErr(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	var he *httpError
	if errors.As(err, &he) {
		respond(w, he.status, errorBody{Code: he.code, Message: he.message})
		return
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The client closed the request before its answer: nothing failed
		// here, and nobody reads what is written. The access log shows
		// nginx's 499 for it instead of a 500.
		log.DebugContext(r.Context(), "client closed the request", "request_id", requestIDOf(w), "error", err)
		w.WriteHeader(statusClientClosed)
		return
	}
	pe, ok := platform.As(err)
	if !ok && errors.Is(err, context.DeadlineExceeded) {
		// The request's deadline (PLATFORM_REQUEST_TIMEOUT) passed while it
		// waited — on the database, or for a password-hashing slot under a
		// burst of sign-ins. That is an overloaded or unreachable
		// dependency, not a bug.
		pe, ok = (&platform.Error{Kind: platform.KindUnavailable, Code: platform.CodeUnavailable,
			Message: "the service is busy or a dependency is unavailable; try again shortly"}).Wrap(err), true
	}
	if !ok || pe.Kind == platform.KindInternal {
		log.ErrorContext(r.Context(), "request failed", "request_id", requestIDOf(w),
			"method", r.Method, "path", loggedPath(r.URL.Path), "error", err)
		respond(w, http.StatusInternalServerError, errorBody{Code: platform.CodeInternal, Message: "internal error"})
		return
	}
	if pe.Kind == platform.KindUnavailable {
		log.WarnContext(r.Context(), "dependency unavailable", "request_id", requestIDOf(w), "error", err)
		if pe.RetryAfter <= 0 {
			c := *pe
			c.RetryAfter = time.Second
			pe = &c
		}
	}
	if pe.RetryAfter > 0 {
		secs := strconv.Itoa(retryAfterSeconds(pe.RetryAfter))
		w.Header().Set("Retry-After", secs)
		w.Header().Set("X-Retry-After", secs)
	}
	respond(w, statusOf(pe.Kind), errorBody{Code: pe.Code, Message: pe.Message, Details: errorDetails(pe)})
}

// errorDetails is the details object of pe as the ErrorDetails schema
// documents it: the service's details, the problem per field, and the
// wait the Retry-After header also gives.
func errorDetails(pe *platform.Error) map[string]any {
	if len(pe.Fields) == 0 && pe.RetryAfter <= 0 {
		return pe.Details
	}
	details := maps.Clone(pe.Details)
	if details == nil {
		details = make(map[string]any, 2)
	}
	if len(pe.Fields) > 0 {
		details["fields"] = pe.Fields
	}
	if pe.RetryAfter > 0 {
		details["retryAfterSeconds"] = retryAfterSeconds(pe.RetryAfter)
	}
	return details
}

// retryAfterSeconds rounds d up to whole seconds, as Retry-After counts.
func retryAfterSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// validator is implemented by request bodies that check their own fields.
type validator interface {
	Validate() error
}

// decode reads a JSON request body into a T. An empty body decodes as the
// zero T so that missing fields are reported by Validate, field by field.
func decode[T any](r *http.Request) (T, error) {
	var v T
	if err := decodeInto(r, &v); err != nil {
		return v, err
	}
	if val, ok := any(&v).(validator); ok {
		if err := val.Validate(); err != nil {
			return v, err
		}
	}
	return v, nil
}

func decodeInto(r *http.Request, dst any) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &httpError{http.StatusRequestEntityTooLarge, codePayloadTooLarge,
				"request body exceeds " + strconv.FormatInt(tooBig.Limit, 10) + " bytes"}
		}
		return &httpError{http.StatusBadRequest, codeInvalidJSON, "request body could not be read"}
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	if !isJSONContentType(r.Header.Get("Content-Type")) {
		return &httpError{http.StatusUnsupportedMediaType, codeUnsupportedMediaType,
			"send the body as application/json"}
	}
	if err := json.Unmarshal(body, dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return platform.Invalid(typeErr.Field, "must be "+jsonTypeName(typeErr.Type.Kind().String()))
		}
		if errors.As(err, &typeErr) {
			return &httpError{http.StatusBadRequest, codeInvalidJSON, "request body must be a JSON object"}
		}
		return &httpError{http.StatusBadRequest, codeInvalidJSON, "request body is not valid JSON"}
	}
	return nil
}

func jsonTypeName(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	}
	return "an object"
}

func isJSONContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// respondWithETag answers 304 Not Modified without a body when the
// request's If-None-Match names etag, and v with the ETag otherwise.
// cacheControl says who may keep the body; "no-cache" in it makes them
// revalidate every time.
func respondWithETag(w http.ResponseWriter, r *http.Request, etag, cacheControl string, v any) {
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", cacheControl)
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	respond(w, http.StatusOK, v)
}

// etagMatches applies If-None-Match's weak comparison (RFC 9110, 13.1.2):
// "*" or any listed tag equal to etag, W/ prefixes ignored.
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	etag = strings.TrimPrefix(etag, "W/")
	for _, candidate := range strings.Split(header, ",") {
		candidate = strings.TrimPrefix(strings.TrimSpace(candidate), "W/")
		if candidate == "*" || candidate == etag {
			return true
		}
	}
	return false
}
