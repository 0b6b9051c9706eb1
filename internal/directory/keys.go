package directory

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"

	"github.com/pchronicle/pchronicle/internal/objstore"
)

// AccessKeyPrefix starts every access key the Directory issues, so a key
// found in a log or a paste is recognizable as a pchronicle user key.
const AccessKeyPrefix = "pcak_"

// NewUserKeys returns a fresh access key (pcak_ and 16 random bytes in hex)
// and secret key (32 random bytes, base64url without padding).
func NewUserKeys() (accessKey string, secretKey objstore.Secret) {
	var id [16]byte
	var secret [32]byte
	rand.Read(id[:]) // crypto/rand.Read never fails (it aborts the process instead)
	rand.Read(secret[:])
	return AccessKeyPrefix + hex.EncodeToString(id[:]), objstore.Secret(base64.RawURLEncoding.EncodeToString(secret[:]))
}
