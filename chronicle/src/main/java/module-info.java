/**
 * Chronicle Bytes over Conduit: zero-copy, bounds-checked {@code Bytes} views of regions,
 * imported regions and message payloads that refuse use after close, and zero-copy sends of
 * {@code BytesMarshallable} objects. See {@link dev.conduit.chronicle.ChronicleViews}.
 *
 * <p>Chronicle needs JVM flags (README, "Chronicle"); only applications that use this module
 * need them.
 */
// Chronicle Bytes is an automatic module (its manifest's Automatic-Module-Name): what this module's API returns is its types.
@SuppressWarnings("requires-transitive-automatic")
module dev.conduit.chronicle {
    requires transitive dev.conduit;
    requires transitive chronicle.bytes;
    requires chronicle.core;
    requires jdk.unsupported;

    exports dev.conduit.chronicle;
}
