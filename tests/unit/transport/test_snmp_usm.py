"""The fast path's USM (transport/snmp_usm.py) against pysnmp's own services: localised keys (with
pysnmp's AES-256 key extension), digests, and ciphers both ways, for every protocol the config offers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyasn1.type import univ
from pysnmp.proto.secmod import rfc3414  # noqa: F401  (first: pysnmp's priv modules import each other)
from pysnmp.proto.secmod.eso.priv import aes256
from pysnmp.proto.secmod.rfc3414.auth import hmacmd5, hmacsha
from pysnmp.proto.secmod.rfc3414.priv import des
from pysnmp.proto.secmod.rfc3826.priv import aes
from pysnmp.proto.secmod.rfc7860.auth import hmacsha2

from fabric_exporter.transport import snmp_usm

PYSNMP_AUTH = {"md5": hmacmd5.HmacMd5(), "sha": hmacsha.HmacSha(),
               "sha256": hmacsha2.HmacSha2(hmacsha2.HmacSha2.SHA256_SERVICE_ID),
               "sha512": hmacsha2.HmacSha2(hmacsha2.HmacSha2.SHA512_SERVICE_ID)}
PYSNMP_PRIV = {"des": des.Des(), "aes": aes.Aes(), "aes128": aes.Aes(), "aes256": aes256.Aes256()}
AUTH_SERVICE_IDS = {"md5": hmacmd5.HmacMd5.SERVICE_ID, "sha": hmacsha.HmacSha.SERVICE_ID,
                    "sha256": hmacsha2.HmacSha2.SHA256_SERVICE_ID, "sha512": hmacsha2.HmacSha2.SHA512_SERVICE_ID}
ENGINE = bytes.fromhex("80001f8880e9630000d61ff449")


def test_every_config_protocol_is_served():
    assert set(snmp_usm.AUTH_PROTOCOLS) == {"md5", "sha", "sha256", "sha512"}
    assert set(snmp_usm.PRIV_PROTOCOLS) == {"des", "aes", "aes128", "aes256"}


@pytest.mark.parametrize("auth", sorted(PYSNMP_AUTH))
@pytest.mark.parametrize("priv", sorted(PYSNMP_PRIV))
def test_localized_keys_equal_pysnmps(auth, priv):
    a, p = PYSNMP_AUTH[auth], PYSNMP_PRIV[priv]
    auth_pw, priv_pw = b"auth-secret-1", b"priv-secret-1"
    want_auth = bytes(a.localize_key(a.hash_passphrase(auth_pw), univ.OctetString(ENGINE)))
    service = AUTH_SERVICE_IDS[auth]
    want_priv = p.localize_key(service, p.hash_passphrase(service, priv_pw), univ.OctetString(ENGINE))
    got_auth, got_priv = snmp_usm.localized_keys(auth, priv, auth_pw, priv_pw, ENGINE)
    assert got_auth == want_auth
    assert got_priv == bytes(want_priv)[:snmp_usm.PRIV_PROTOCOLS[priv].key_length]
    assert len(got_priv) == snmp_usm.PRIV_PROTOCOLS[priv].key_length


def test_aes256_extension_is_reeders_not_blumenthals():
    """sha1 localises to 20 octets: AES-256 needs an extension, and the two drafts differ there."""
    _, key = snmp_usm.localized_keys("sha", "aes256", b"auth-secret-1", b"priv-secret-1", ENGINE)
    from pysnmp.proto.secmod.eso.priv import aes256 as eso

    blumenthal = eso.AesBlumenthal256().localize_key(
        hmacsha.HmacSha.SERVICE_ID, hmacsha.HmacSha().hash_passphrase(b"priv-secret-1"), univ.OctetString(ENGINE))
    assert key[:20] == bytes(blumenthal)[:20] and key != bytes(blumenthal)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(PYSNMP_AUTH)), st.binary(min_size=30, max_size=600), st.integers(0, 20))
def test_digests_equal_pysnmps(auth, body, where):
    a = PYSNMP_AUTH[auth]
    proto = snmp_usm.AUTH_PROTOCOLS[auth]
    key, _ = snmp_usm.localized_keys(auth, None, b"auth-secret-1", None, ENGINE)
    n = proto.digest_length
    # a "message" with the zeroed digest at ``where``; pysnmp finds the zeros itself
    body = body.replace(b"\x00", b"\x01")
    msg = body[:where] + bytes(n) + body[where:]
    signed = snmp_usm.sign(proto, key, bytearray(msg), where)
    assert signed == bytes(a.authenticate_outgoing_message(univ.OctetString(key), msg))
    assert snmp_usm.verify(proto, key, signed, where, signed[where:where + n])
    a.authenticate_incoming_message(univ.OctetString(key), univ.OctetString(signed[where:where + n]), signed)  # raises if wrong
    tampered = bytearray(signed)
    tampered[-1] ^= 1
    assert not snmp_usm.verify(proto, key, bytes(tampered), where, signed[where:where + n])
    assert not snmp_usm.verify(proto, key, signed, where, signed[where:where + n - 1])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(PYSNMP_PRIV)), st.sampled_from(sorted(PYSNMP_AUTH)), st.binary(min_size=1, max_size=700),
       st.integers(0, (1 << 31) - 1), st.integers(0, (1 << 31) - 1), st.integers(0, (1 << 64) - 1))
def test_ciphers_interoperate_with_pysnmps(priv, auth, plaintext, boots, etime, salt):
    p = PYSNMP_PRIV[priv]
    proto = snmp_usm.PRIV_PROTOCOLS[priv]
    _, key = snmp_usm.localized_keys(auth, priv, b"auth-secret-1", b"priv-secret-1", ENGINE)
    # ours -> pysnmp
    ciphertext, params = snmp_usm.encrypt(proto, key, boots, etime, salt, plaintext)
    back = p.decrypt_data(univ.OctetString(key), (boots, etime, univ.OctetString(params)), univ.OctetString(ciphertext))
    assert bytes(back)[:len(plaintext)] == plaintext
    # pysnmp -> ours
    ciphertext, params = p.encrypt_data(univ.OctetString(key), (boots, etime, None), plaintext)
    got = snmp_usm.decrypt(proto, key, boots, etime, bytes(params), bytes(ciphertext))
    assert got[:len(plaintext)] == plaintext
    if proto.cipher == "aes":
        assert len(got) == len(plaintext)


def test_undecryptable_input_is_a_usm_error_not_a_crash():
    proto = snmp_usm.PRIV_PROTOCOLS["des"]
    with pytest.raises(snmp_usm.UsmError):
        snmp_usm.decrypt(proto, bytes(16), 1, 1, bytes(8), bytes(9))
    with pytest.raises(snmp_usm.UsmError):
        snmp_usm.decrypt(snmp_usm.PRIV_PROTOCOLS["aes"], bytes(16), 1, 1, bytes(7), bytes(16))


# -- the per-key caches (HMAC states, cipher key objects) ---------------------------------------

@settings(max_examples=150, deadline=None)
@given(auth=st.sampled_from(sorted(snmp_usm.AUTH_PROTOCOLS)), key=st.binary(min_size=1, max_size=300),
       message=st.binary(max_size=600))
def test_cached_hmac_states_give_the_standard_hmac(auth, key, message):
    """Keys shorter and longer than the hash's block (hashed first): the same digest as hmac.digest."""
    import hmac as std_hmac

    proto = snmp_usm.AUTH_PROTOCOLS[auth]
    assert snmp_usm.digest(proto, key, message) == std_hmac.digest(key, message, proto.hash_name)[:proto.digest_length]
    assert snmp_usm.digest(proto, key, message) == snmp_usm.digest(proto, key, message)  # the cached states stay clean


@settings(max_examples=60, deadline=None)
@given(auth=st.sampled_from(sorted(snmp_usm.AUTH_PROTOCOLS)), body=st.binary(min_size=60, max_size=400),
       where=st.integers(0, 10))
def test_verify_in_pieces_equals_verify_of_the_zeroed_copy(auth, body, where):
    import hmac as std_hmac

    proto = snmp_usm.AUTH_PROTOCOLS[auth]
    key = bytes(range(1, 33))
    message = bytearray(body)
    offset = where
    message[offset:offset + proto.digest_length] = bytes(proto.digest_length)
    signed = snmp_usm.sign(proto, key, bytearray(message), offset)
    received = signed[offset:offset + proto.digest_length]
    assert received == std_hmac.digest(key, bytes(message), proto.hash_name)[:proto.digest_length]
    assert snmp_usm.verify(proto, key, signed, offset, received)
    assert not snmp_usm.verify(proto, key, signed, offset, bytes(a ^ 1 for a in received[:1]) + received[1:])


def test_a_new_key_never_meets_another_keys_cached_state():
    """An engine ID change (rediscovery after a restart) or a password change localises another key:
    digests and ciphers follow the key given, whatever was cached for the one before."""
    auth, priv = snmp_usm.AUTH_PROTOCOLS["sha"], snmp_usm.PRIV_PROTOCOLS["aes128"]
    old_auth, old_priv = snmp_usm.localized_keys("sha", "aes128", b"auth-pass-1", b"priv-pass-1", b"\x80engine-old")
    new_auth, new_priv = snmp_usm.localized_keys("sha", "aes128", b"auth-pass-1", b"priv-pass-1", b"\x80engine-new")
    message = bytearray(b"\x30\x10" + bytes(12) + b"payload!")
    old_signed = snmp_usm.sign(auth, old_auth, bytearray(message), 2)
    new_signed = snmp_usm.sign(auth, new_auth, bytearray(message), 2)
    assert old_signed != new_signed
    assert not snmp_usm.verify(auth, new_auth, old_signed, 2, old_signed[2:14])
    assert snmp_usm.verify(auth, old_auth, old_signed, 2, old_signed[2:14])
    plaintext = b"\x30\x0bscoped pdu!" * 3
    ciphertext, params = snmp_usm.encrypt(priv, old_priv, 3, 100, 7, plaintext)
    assert snmp_usm.decrypt(priv, old_priv, 3, 100, params, ciphertext) == plaintext
    assert snmp_usm.decrypt(priv, new_priv, 3, 100, params, ciphertext) != plaintext
    # boots changed (agent rebooted, same engine ID): same key, another IV -- nothing of the old message's IV is kept
    ciphertext2, params2 = snmp_usm.encrypt(priv, old_priv, 4, 100, 7, plaintext)
    assert params2 == params and ciphertext2 != ciphertext
    assert snmp_usm.decrypt(priv, old_priv, 4, 100, params2, ciphertext2) == plaintext
    des = snmp_usm.PRIV_PROTOCOLS["des"]
    k1, k2 = bytes(range(16)), bytes(range(1, 17))
    c1, p1 = snmp_usm.encrypt(des, k1, 1, 1, 5, plaintext)
    assert snmp_usm.decrypt(des, k1, 1, 1, p1, c1)[:len(plaintext)] == plaintext
    assert snmp_usm.decrypt(des, k2, 1, 1, p1, c1)[:len(plaintext)] != plaintext

# -- the edges the mutation run (scripts/mutation snmp_usm) found untested (issue 21) ----------------


def test_an_auth_only_user_gets_no_privacy_key():
    """authNoPriv: no privacy key whichever half of the privacy settings is missing."""
    auth_key, priv_key = snmp_usm.localized_keys("sha", None, b"auth-secret-1", None, ENGINE)
    assert priv_key is None and len(auth_key) == 20
    assert snmp_usm.localized_keys("sha", "aes", b"auth-secret-1", None, ENGINE) == (auth_key, None)
    assert snmp_usm.localized_keys("sha", None, b"auth-secret-1", b"priv-secret-1", ENGINE) == (auth_key, None)


def test_the_salt_counts_up_by_one_and_wraps_at_64_bits():
    """An IV must never repeat under one key: each message takes the next salt (RFC 3826 3.1.2.1)."""
    salt = snmp_usm.Salt()
    first = salt.next()
    assert [salt.next(), salt.next()] == [(first + 1) % 2**64, (first + 2) % 2**64]
    salt.value = 2**64 - 2
    assert [salt.next(), salt.next(), salt.next()] == [2**64 - 1, 0, 1]


def test_privacy_parameters_carry_boots_and_the_salt():
    """DES: msgPrivacyParameters = engine boots then the salt's low 32 bits (RFC 3414 8.1.1.1); AES:
    the 64-bit salt (RFC 3826 3.1.2.1). Another salt, another IV: another ciphertext."""
    key = bytes(range(16))
    des = snmp_usm.PRIV_PROTOCOLS["des"]
    ciphertext, params = snmp_usm.encrypt(des, key, 7, 99, 0x1122334455667788, b"scoped pdu")
    assert params == bytes.fromhex("00000007" "55667788")
    other, params = snmp_usm.encrypt(des, key, 7, 99, 0x1122334455667789, b"scoped pdu")
    assert params == bytes.fromhex("00000007" "55667789") and other != ciphertext
    assert snmp_usm.decrypt(des, key, 7, 99, params, other)[:10] == b"scoped pdu"
    _, params = snmp_usm.encrypt(snmp_usm.PRIV_PROTOCOLS["aes"], key, 7, 99, 0x1122334455667788, b"x")
    assert params == bytes.fromhex("1122334455667788")
