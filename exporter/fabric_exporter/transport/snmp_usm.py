"""SNMPv3 User-based Security Model, per message: keys, digests and ciphers. Pure functions.

Authentication: HMAC-MD5-96 and HMAC-SHA-96 (RFC 3414), HMAC-192-SHA-256 and HMAC-384-SHA-512
(RFC 7860), with the standard library's ``hmac``. Privacy: DES-CBC (RFC 3414 8) and AES-128-CFB
(RFC 3826) with ``cryptography``, plus AES-256-CFB with the key extension pysnmp's
``usmAesCfb256Protocol`` uses -- the Reeder draft (Cisco's): each extension block is the
password-to-key algorithm run again on the key so far, then localised. (pysnmp's
``usmAesBlumenthalCfb256Protocol`` hashes the key so far once instead; our config does not offer it.)
tests/unit/transport/test_snmp_usm.py checks every key, digest and cipher against pysnmp's own services.

Password-to-key (one MiB hashed per password) is cached per (hash, password), and localised keys per
engine ID, so 800 switches sharing a credential cost one MiB hash plus a short one per engine. Per
message, what depends on the key alone is cached by the key's own bytes (so a new engine ID, a new
password or a rediscovery can never meet another key's state): HMAC's inner and outer hash states
after the padded key (RFC 2104; each digest then hashes the message and one block, not the key's two
blocks again) and the cipher's key object.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from functools import lru_cache
from typing import Any, NamedTuple

from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.decrepit.ciphers.modes import CFB
from cryptography.hazmat.primitives.ciphers import Cipher
from cryptography.hazmat.primitives.ciphers.algorithms import AES
from cryptography.hazmat.primitives.ciphers.modes import CBC


class AuthProtocol(NamedTuple):
    hash_name: str  # hashlib name: the HMAC's hash and the one keys are derived with
    digest_length: int  # octets of msgAuthenticationParameters (the HMAC truncated to them)


class PrivProtocol(NamedTuple):
    cipher: str  # "des" or "aes"
    key_length: int  # octets of localised key the cipher needs (DES: key 8 + pre-IV 8)


#: the config's auth_protocol names the fast path serves
AUTH_PROTOCOLS = {
    "md5": AuthProtocol("md5", 12),  # usmHMACMD5AuthProtocol
    "sha": AuthProtocol("sha1", 12),  # usmHMACSHAAuthProtocol
    "sha256": AuthProtocol("sha256", 24),  # usmHMAC192SHA256AuthProtocol
    "sha512": AuthProtocol("sha512", 48),  # usmHMAC384SHA512AuthProtocol
}
#: the config's priv_protocol names the fast path serves
PRIV_PROTOCOLS = {
    "des": PrivProtocol("des", 16),  # usmDESPrivProtocol
    "aes": PrivProtocol("aes", 16),  # usmAesCfb128Protocol
    "aes128": PrivProtocol("aes", 16),
    "aes256": PrivProtocol("aes", 32),  # usmAesCfb256Protocol (Reeder key extension)
}

_ONE_MIB = 1_048_576


class UsmError(Exception):
    """A message the USM cannot accept (wrong digest, undecryptable); never quotes a key."""


@lru_cache(maxsize=256)
def password_to_key(hash_name: str, password: bytes) -> bytes:
    """RFC 3414 A.2: the hash of the password repeated to one MiB (Ku, not yet localised)."""
    if not password:
        raise ValueError("empty SNMPv3 password")
    repeated = password * (_ONE_MIB // len(password) + 1)
    return hashlib.new(hash_name, repeated[:_ONE_MIB]).digest()


def localize(hash_name: str, key: bytes, engine_id: bytes) -> bytes:
    """RFC 3414 2.6: Kul = H(Ku || engineID || Ku)."""
    return hashlib.new(hash_name, key + engine_id + key).digest()


@lru_cache(maxsize=4096)
def localized_keys(auth: str, priv: str | None, auth_password: bytes, priv_password: bytes | None,
                   engine_id: bytes) -> tuple[bytes, bytes | None]:
    """(authentication key, privacy key) localised to ``engine_id``; the privacy key is as long as
    its cipher needs, extended the way pysnmp extends it."""
    hash_name = AUTH_PROTOCOLS[auth].hash_name
    auth_key = localize(hash_name, password_to_key(hash_name, auth_password), engine_id)
    if priv is None or priv_password is None:
        return auth_key, None
    size = PRIV_PROTOCOLS[priv].key_length
    priv_key = localize(hash_name, password_to_key(hash_name, priv_password), engine_id)
    while len(priv_key) < size:  # Reeder: password-to-key again on the key so far, then localise
        priv_key += localize(hash_name, password_to_key(hash_name, priv_key), engine_id)
    return auth_key, priv_key[:size]


_IPAD = bytes(x ^ 0x36 for x in range(256))  # RFC 2104: the key XOR ipad / opad, as translate() tables
_OPAD = bytes(x ^ 0x5C for x in range(256))


@lru_cache(maxsize=4096)
def hmac_states(hash_name: str, key: bytes) -> tuple[Any, Any]:
    """RFC 2104: the hash states after (key XOR ipad) and (key XOR opad), the key padded to the hash's
    block (hashed first if longer). A digest copies them rather than hashing the key again."""
    inner = hashlib.new(hash_name)
    block = inner.block_size
    if len(key) > block:
        key = hashlib.new(hash_name, key).digest()
    key = key.ljust(block, b"\0")
    inner.update(key.translate(_IPAD))
    return inner, hashlib.new(hash_name, key.translate(_OPAD))


def _hmac(hash_name: str, key: bytes, *parts: bytes | bytearray | memoryview) -> bytes:
    """HMAC(key, the concatenation of ``parts``): equal to ``hmac.digest``, from the cached states."""
    inner_state, outer_state = hmac_states(hash_name, key)
    inner = inner_state.copy()
    for part in parts:
        inner.update(part)
    outer = outer_state.copy()
    outer.update(inner.digest())
    return outer.digest()


def digest(auth: AuthProtocol, key: bytes, message: bytes | bytearray) -> bytes:
    """msgAuthenticationParameters of ``message`` (whose own parameters are zeros)."""
    return _hmac(auth.hash_name, key, message)[:auth.digest_length]


def sign(auth: AuthProtocol, key: bytes, message: bytearray, offset: int) -> bytes:
    """Write the digest into the zeroed parameters at ``offset``; returns the signed message."""
    message[offset:offset + auth.digest_length] = digest(auth, key, message)
    return bytes(message)


def verify(auth: AuthProtocol, key: bytes, message: bytes, offset: int, received: bytes) -> bool:
    """RFC 3414 6.3.2 / 7.3.2: recompute over the message with the parameters zeroed (hashed as three
    pieces, the message never copied); constant-time compare."""
    n = auth.digest_length
    if len(received) != n:
        return False
    view = memoryview(message)
    mac = _hmac(auth.hash_name, key, view[:offset], _ZEROS[:n], view[offset + n:])
    return hmac.compare_digest(mac[:n], received)


_ZEROS = bytes(64)


@lru_cache(maxsize=4096)
def _aes(key: bytes) -> AES:
    """The cipher's key object, checked and built once per key (a Cipher per message still takes its IV)."""
    return AES(key)


@lru_cache(maxsize=4096)
def _des(key: bytes) -> TripleDES:
    return TripleDES(key[:8] * 3)  # 3DES with K1=K2=K3 is DES


class Salt:
    """The per-session salt counter (RFC 3414 8.1.1.1, RFC 3826 3.1.2.1): starts at a random value."""

    def __init__(self) -> None:
        self.value = int.from_bytes(os.urandom(8), "big")

    def next(self) -> int:
        self.value = (self.value + 1) & 0xFFFFFFFFFFFFFFFF
        return self.value


def encrypt(priv: PrivProtocol, key: bytes, boots: int, engine_time: int, salt: int, plaintext: bytes
            ) -> tuple[bytes, bytes]:
    """(encryptedPDU contents, msgPrivacyParameters)."""
    if priv.cipher == "aes":
        params = salt.to_bytes(8, "big")
        iv = boots.to_bytes(4, "big") + engine_time.to_bytes(4, "big") + params
        enc = Cipher(_aes(key[:priv.key_length]), CFB(iv)).encryptor()
        return enc.update(plaintext) + enc.finalize(), params
    params = boots.to_bytes(4, "big") + (salt & 0xFFFFFFFF).to_bytes(4, "big")
    iv = bytes(a ^ b for a, b in zip(params, key[8:16]))
    if len(plaintext) % 8:
        plaintext += bytes(8 - len(plaintext) % 8)
    enc = Cipher(_des(key), CBC(iv)).encryptor()
    return enc.update(plaintext) + enc.finalize(), params


def decrypt(priv: PrivProtocol, key: bytes, boots: int, engine_time: int, params: bytes, ciphertext: bytes) -> bytes:
    """The scopedPDU (DES: with its padding) of an encryptedPDU; UsmError if it cannot be decrypted."""
    if len(params) != 8:
        raise UsmError(f"msgPrivacyParameters of {len(params)} octets, 8 expected")
    if priv.cipher == "aes":
        iv = boots.to_bytes(4, "big") + engine_time.to_bytes(4, "big") + params
        dec = Cipher(_aes(key[:priv.key_length]), CFB(iv)).decryptor()
        return dec.update(ciphertext) + dec.finalize()
    if len(ciphertext) % 8:
        raise UsmError(f"DES ciphertext of {len(ciphertext)} octets, not a multiple of 8")
    iv = bytes(a ^ b for a, b in zip(params, key[8:16]))
    dec = Cipher(_des(key), CBC(iv)).decryptor()
    return dec.update(ciphertext) + dec.finalize()
