package platform

import "testing"

func TestFieldErrors(t *testing.T) {
	if err := (FieldErrors{}).Err(); err != nil {
		t.Fatalf("no problems: %v", err)
	}
	f := FieldErrors{}
	f.Add("nickname", "is taken")
	f.Add("email", "is not an email address")
	f.Add("email", "a later problem does not replace the first")
	pe, ok := As(f.Err())
	if !ok || pe.Kind != KindInvalid || pe.Code != CodeValidation {
		t.Fatalf("err = %v, want a VALIDATION_ERROR", f.Err())
	}
	if pe.Message != "email: is not an email address" {
		t.Errorf("message %q, want the alphabetically first field and its problem", pe.Message)
	}
	if len(pe.Fields) != 2 || pe.Fields["nickname"] != "is taken" || pe.Fields["email"] != "is not an email address" {
		t.Errorf("fields %v", pe.Fields)
	}
	f["name"] = "changed after Err"
	if _, leaked := pe.Fields["name"]; leaked {
		t.Error("the error shares its fields with the collector")
	}
}
