package account

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// QuarantineKeys are the keys under which a deleted account's email and
// (when it has one) nickname stay reserved in realm: keyed hashes, so the
// reservation table does not reveal which addresses were ever registered.
// The email's key comes first.
func QuarantineKeys(secret string, realm Realm, email, nickname string) []string {
	keys := []string{QuarantineEmailKey(secret, realm, email)}
	if nickname != "" {
		keys = append(keys, QuarantineNicknameKey(secret, realm, nickname))
	}
	return keys
}

// QuarantineEmailKey is the key under which email stays reserved.
func QuarantineEmailKey(secret string, realm Realm, email string) string {
	return quarantineKey(secret, "email|"+string(realm)+"|"+NormalizeEmail(email))
}

// QuarantineNicknameKey is the key under which nickname stays reserved.
func QuarantineNicknameKey(secret string, realm Realm, nickname string) string {
	return quarantineKey(secret, "nickname|"+string(realm)+"|"+NicknameKey(nickname))
}

func quarantineKey(secret, id string) string {
	m := hmac.New(sha256.New, []byte("platformctl quarantine\x00"+secret))
	m.Write([]byte(id))
	return hex.EncodeToString(m.Sum(nil))
}
