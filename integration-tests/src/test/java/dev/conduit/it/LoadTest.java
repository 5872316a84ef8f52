package dev.conduit.it;

import org.junit.jupiter.api.Tag;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A test of the transport under load or repeated faults (many peers, long loops, random kills),
 * which runs once: in the module-path execution, not again in the class-path one
 * ({@code excludedGroups} of integration-tests/pom.xml). How Conduit is loaded changes its
 * discovery and which module native access is granted to, both done when a Conduit opens, and
 * every other test of this module opens its Conduits both ways; what such a test adds, the same
 * message path driven harder, is the same on either path. docs/decisions.md, "The integration
 * tests' load tests run on the module path only", says why and lists them.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Tag(LoadTest.TAG)
public @interface LoadTest {

    /** The JUnit tag that the class-path execution excludes. */
    String TAG = "load";
}
